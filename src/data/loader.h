#pragma once
// Batches of a dataset written straight into reusable buffers. With workers == 0 the
// training thread fills each batch when asked; with workers > 0 that many threads fill
// batches ahead, in order.
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "ddpscope/buffer.h"
#include "ddpscope/dataset.h"
#include "observe/span_buffer.h"

namespace ddp {

// Fault injection (docs/usage.md): DDPSCOPE_LOADER_DELAY_US, microseconds in [0, 1e7], makes
// every batch a loader fills take that much longer, slept in the thread that fills it (a
// worker, or the training thread without workers), as a slow transform or disk would.
// 0 when unset. Throws UsageError for another value.
int64_t loader_delay_from_env();

class Loader {
 public:
  Loader(const Dataset& dataset, int64_t batch_size, int workers);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // Begins an epoch over `indices` in their order: batches of batch_size, the last partial
  // batch kept (PyTorch's drop_last=False), at most max_batches of them when >= 0.
  void start_epoch(int64_t epoch, std::vector<int64_t> indices, int64_t max_batches = -1);
  int64_t num_batches() const { return num_batches_; }

  // The next batch of the epoch, or false at its end. Valid until the next call.
  bool next(Batch& batch);

  // From now on the workers record their batch fills as spans (--profiler trace), into one
  // buffer of this capacity. No effect without workers.
  void record_spans(std::size_t capacity);
  // The workers' spans so far, and how many did not fit.
  std::vector<Span> spans();
  std::size_t spans_dropped();

 private:
  // implementation detail, free to change
  struct Slot;
  void worker_loop();
  // dataset_.fill, then the injected delay.
  void fill(int64_t epoch, std::span<const int64_t> indices, float* x, float* y) const;
  void abandon_epoch_locked();  // mutex_ held: drops queued batches, in-flight fills end unused

  const Dataset& dataset_;
  int64_t batch_size_;
  int workers_;
  int64_t delay_us_;                          // DDPSCOPE_LOADER_DELAY_US
  int64_t num_batches_ = 0;                   // consumer side
  int64_t next_batch_ = 0;                    // consumer side: the batch next() returns next
  Slot* held_ = nullptr;                      // consumer side: the slot of the batch last returned
  std::vector<std::unique_ptr<Slot>> slots_;  // batch b lives in slots_[b % size]
  std::vector<std::thread> threads_;

  // Shared with the workers, under mutex_.
  std::mutex mutex_;
  std::condition_variable work_cv_;   // workers: a batch to fill, or stopping
  std::condition_variable ready_cv_;  // consumer: a slot became ready
  bool stopping_ = false;
  int64_t generation_ = 0;  // bumped per epoch; a fill of an older generation is discarded
  int64_t epoch_ = 0;
  std::vector<int64_t> indices_;
  int64_t fill_end_ = 0;                    // batches of this generation to fill
  int64_t next_to_fill_ = 0;                // the next batch a worker claims
  std::unique_ptr<SpanBuffer> fill_spans_;  // when tracing
};

}  // namespace ddp
