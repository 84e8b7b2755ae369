#include "data/loader.h"

#include "base/check.h"
#include "observe/phase.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <utility>

#include "base/ceil_div.h"
#include "ddpscope/error.h"

namespace ddp {

int64_t loader_delay_from_env() {
  const char* text = std::getenv("DDPSCOPE_LOADER_DELAY_US");
  if (text == nullptr || *text == '\0') return 0;
  char* end = nullptr;
  const long long value = std::strtoll(text, &end, 10);
  if (*end != '\0' || value < 0 || value > 10'000'000) {
    throw UsageError(
        fmt::format("DDPSCOPE_LOADER_DELAY_US='{}' is not a whole number of microseconds in [0, 10000000]", text));
  }
  return value;
}

// One batch's storage. A slot cycles kFree -> kFilling (a worker owns it) -> kReady ->
// kHeld (the consumer reads it) -> kFree; the state changes under Loader::mutex_, and
// whoever the state names may touch the rest without the lock.
struct Loader::Slot {
  enum class State { kFree, kFilling, kReady, kHeld };
  State state = State::kFree;
  int64_t batch = 0;
  int64_t generation = -1;
  std::vector<int64_t> indices;  // the batch's sample indices, copied so the fill needs no lock
  Buffer x, y;                   // (rows, I), (rows, O): rows = min(batch_size, dataset size)
  std::exception_ptr error;      // what the dataset threw while filling this batch
};

Loader::Loader(const Dataset& dataset, int64_t batch_size, int workers)
    : dataset_(dataset), batch_size_(batch_size), workers_(workers), delay_us_(loader_delay_from_env()) {
  DDP_CHECK_GT(batch_size, 0);
  DDP_CHECK_GE(workers, 0);
  // Two slots per worker: each worker can fill one batch while the consumer reads another.
  // A batch never holds more samples than the dataset has, whatever --batch-size says.
  const int slots = workers == 0 ? 1 : 2 * workers;
  const int64_t rows = std::min(batch_size, dataset.size());
  for (int i = 0; i < slots; ++i) {
    auto slot = std::make_unique<Slot>();
    slot->x = Buffer(rows * dataset.input_dim());
    slot->y = Buffer(rows * dataset.output_dim());
    slot->indices.reserve(rows);
    slots_.push_back(std::move(slot));
  }
  try {
    for (int i = 0; i < workers; ++i) threads_.emplace_back([this] { worker_loop(); });
  } catch (...) {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    work_cv_.notify_all();
    for (std::thread& thread : threads_) thread.join();
    throw;
  }
}

Loader::~Loader() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void Loader::abandon_epoch_locked() {
  ++generation_;
  fill_end_ = 0;
  next_to_fill_ = 0;
  for (const auto& slot : slots_) {
    if (slot->state == Slot::State::kReady || slot->state == Slot::State::kHeld) {
      slot->state = Slot::State::kFree;
      slot->error = nullptr;
    }
  }
  held_ = nullptr;
}

void Loader::start_epoch(int64_t epoch, std::vector<int64_t> indices, int64_t max_batches) {
  const int64_t size = static_cast<int64_t>(indices.size());
  int64_t batches = ceil_div(size, batch_size_);
  if (max_batches >= 0) batches = std::min(batches, max_batches);
  num_batches_ = batches;
  next_batch_ = 0;
  if (workers_ == 0) {
    epoch_ = epoch;
    indices_ = std::move(indices);
    return;
  }
  {
    // Batches of an unfinished epoch are dropped; fills still running finish unused.
    std::lock_guard lock(mutex_);
    abandon_epoch_locked();
    epoch_ = epoch;
    indices_ = std::move(indices);
    fill_end_ = batches;
  }
  work_cv_.notify_all();
}

bool Loader::next(Batch& batch) {
  if (next_batch_ >= num_batches_) {
    if (workers_ > 0) {
      std::lock_guard lock(mutex_);
      if (held_ != nullptr) held_->state = Slot::State::kFree;
      held_ = nullptr;
    }
    return false;
  }
  const int64_t b = next_batch_;
  const int64_t count = std::min<int64_t>(batch_size_, static_cast<int64_t>(indices_.size()) - b * batch_size_);
  if (workers_ == 0) {
    Slot& slot = *slots_[0];
    fill(epoch_, std::span(indices_).subspan(b * batch_size_, count), slot.x.data(), slot.y.data());
    ++next_batch_;
    batch = {slot.x.data(), slot.y.data(), count, b};
    return true;
  }

  Slot& slot = *slots_[b % static_cast<int64_t>(slots_.size())];
  std::exception_ptr error;
  {
    std::unique_lock lock(mutex_);
    if (held_ != nullptr) {
      held_->state = Slot::State::kFree;
      held_ = nullptr;
      work_cv_.notify_one();
    }
    // Slot b % K can only be ready with batch b of this generation: batch b - K was released
    // above or earlier, and ready batches of older generations were dropped by start_epoch.
    ready_cv_.wait(lock, [&] { return slot.state == Slot::State::kReady; });
    DDP_CHECK_EQ(slot.batch, b, "loader slot out of order");
    DDP_CHECK_EQ(slot.generation, generation_, "loader slot out of order");
    if (slot.error) {
      // The epoch ends with the error: later next() calls return false.
      error = std::exchange(slot.error, nullptr);
      slot.state = Slot::State::kFree;
      abandon_epoch_locked();
      next_batch_ = num_batches_;
    } else {
      slot.state = Slot::State::kHeld;
      held_ = &slot;
    }
  }
  if (error) std::rethrow_exception(error);
  ++next_batch_;
  batch = {slot.x.data(), slot.y.data(), count, b};
  return true;
}

void Loader::fill(int64_t epoch, std::span<const int64_t> indices, float* x, float* y) const {
  dataset_.fill(epoch, indices, x, y);
  if (delay_us_ > 0) std::this_thread::sleep_for(std::chrono::microseconds(delay_us_));
}

void Loader::record_spans(std::size_t capacity) {
  std::lock_guard lock(mutex_);
  fill_spans_ = workers_ > 0 ? std::make_unique<SpanBuffer>(capacity) : nullptr;
}

std::vector<Span> Loader::spans() {
  std::lock_guard lock(mutex_);  // workers add their spans under the lock
  return fill_spans_ ? std::vector<Span>(fill_spans_->begin(), fill_spans_->end()) : std::vector<Span>{};
}

std::size_t Loader::spans_dropped() {
  std::lock_guard lock(mutex_);
  return fill_spans_ ? fill_spans_->dropped() : 0;
}

void Loader::worker_loop() {
  const int64_t num_slots = static_cast<int64_t>(slots_.size());
  std::unique_lock lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [&] {
      return stopping_ || (next_to_fill_ < fill_end_ && slots_[next_to_fill_ % num_slots]->state == Slot::State::kFree);
    });
    if (stopping_) return;
    const int64_t b = next_to_fill_++;
    Slot& slot = *slots_[b % num_slots];
    slot.state = Slot::State::kFilling;
    slot.batch = b;
    slot.generation = generation_;
    const int64_t first = b * batch_size_;
    const int64_t last = std::min<int64_t>(first + batch_size_, static_cast<int64_t>(indices_.size()));
    slot.indices.assign(indices_.begin() + first, indices_.begin() + last);  // within capacity: no allocation
    const int64_t epoch = epoch_;
    // Another worker may claim the next batch while this one fills.
    if (next_to_fill_ < fill_end_) work_cv_.notify_one();
    lock.unlock();
    const int64_t started = steady_now_ns();
    try {
      fill(epoch, slot.indices, slot.x.data(), slot.y.data());
    } catch (...) {
      slot.error = std::current_exception();
    }
    const int64_t ended = steady_now_ns();
    lock.lock();
    if (fill_spans_) fill_spans_->add({started, ended, static_cast<uint16_t>(Phase::kData), TraceThread::kLoader});
    if (slot.generation == generation_) {
      slot.state = Slot::State::kReady;
      ready_cv_.notify_one();
    } else {
      slot.state = Slot::State::kFree;
      slot.error = nullptr;
      work_cv_.notify_one();
    }
  }
}

}  // namespace ddp
