#include "data/loader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <numeric>
#include <set>
#include <stdexcept>
#include <thread>

#include "data/sampler.h"
#include "ddpscope/error.h"

namespace ddp {
namespace {

std::unique_ptr<Dataset> random_dataset(int64_t size, int64_t input_dim = 10, int64_t output_dim = 1) {
  DatasetSpec spec;
  spec.size = size;
  spec.input_dim = input_dim;
  spec.output_dim = output_dim;
  spec.seed = 11;
  return make_dataset(spec);
}

// What one epoch delivered, batch by batch.
struct Epoch {
  std::vector<int64_t> sizes;
  std::vector<std::vector<float>> x, y;
};

Epoch run_epoch(Loader& loader, const Dataset& dataset, int64_t epoch, std::vector<int64_t> indices,
                int64_t max_batches = -1) {
  loader.start_epoch(epoch, std::move(indices), max_batches);
  Epoch out;
  Batch batch;
  while (loader.next(batch)) {
    EXPECT_EQ(batch.index, static_cast<int64_t>(out.sizes.size()));
    out.sizes.push_back(batch.size);
    out.x.emplace_back(batch.x, batch.x + batch.size * dataset.input_dim());
    out.y.emplace_back(batch.y, batch.y + batch.size * dataset.output_dim());
  }
  EXPECT_EQ(static_cast<int64_t>(out.sizes.size()), loader.num_batches());
  return out;
}

class LoaderWorkers : public ::testing::TestWithParam<int> {};

TEST_P(LoaderWorkers, BatchSizesKeepTheLastPartialBatch) {
  const auto dataset = random_dataset(5000);
  Loader loader(*dataset, 256, GetParam());
  const Epoch e = run_epoch(loader, *dataset, 0, epoch_order(5000, true, 1, 0));
  ASSERT_EQ(e.sizes.size(), 20u);
  for (int b = 0; b < 19; ++b) EXPECT_EQ(e.sizes[b], 256);
  EXPECT_EQ(e.sizes[19], 136);
}

TEST_P(LoaderWorkers, MaxBatches) {
  const auto dataset = random_dataset(1000);
  Loader loader(*dataset, 100, GetParam());
  EXPECT_EQ(run_epoch(loader, *dataset, 0, epoch_order(1000, false, 0, 0), 3).sizes.size(), 3u);
  EXPECT_EQ(run_epoch(loader, *dataset, 1, epoch_order(1000, false, 0, 1), 0).sizes.size(), 0u);
  EXPECT_EQ(run_epoch(loader, *dataset, 2, epoch_order(1000, false, 0, 2), 50).sizes.size(), 10u);
  EXPECT_EQ(run_epoch(loader, *dataset, 3, {}).sizes.size(), 0u);
}

TEST_P(LoaderWorkers, BatchesAreTheDatasetRowsInOrder) {
  const auto dataset = random_dataset(1000, 7, 3);
  Loader loader(*dataset, 64, GetParam());
  const auto order = epoch_order(1000, true, 4, 9);
  const Epoch e = run_epoch(loader, *dataset, 9, order);
  ASSERT_EQ(e.sizes.size(), 16u);
  for (size_t b = 0; b < e.sizes.size(); ++b) {
    const std::span<const int64_t> indices = std::span(order).subspan(b * 64, e.sizes[b]);
    std::vector<float> x(indices.size() * 7), y(indices.size() * 3);
    dataset->fill(9, indices, x.data(), y.data());
    EXPECT_EQ(e.x[b], x) << "batch " << b;
    EXPECT_EQ(e.y[b], y) << "batch " << b;
  }
}

TEST_P(LoaderWorkers, ManyEpochsAbandonedEarly) {
  // Like --max-steps stopping mid-epoch: each epoch takes a few batches and moves on, so
  // prefetched batches of the old epoch must be dropped, never delivered.
  const auto dataset = random_dataset(2000, 4, 1);
  Loader loader(*dataset, 32, GetParam());
  for (int64_t epoch = 0; epoch < 200; ++epoch) {
    const auto order = epoch_order(2000, true, 2, epoch);
    loader.start_epoch(epoch, order);
    const int64_t take = epoch % 7;
    Batch batch;
    for (int64_t b = 0; b < take; ++b) {
      ASSERT_TRUE(loader.next(batch));
      ASSERT_EQ(batch.index, b);
      ASSERT_EQ(batch.size, 32);
      std::vector<float> x(32 * 4), y(32);
      dataset->fill(epoch, std::span(order).subspan(b * 32, 32), x.data(), y.data());
      ASSERT_EQ(std::vector<float>(batch.x, batch.x + x.size()), x) << "epoch " << epoch << " batch " << b;
      ASSERT_EQ(std::vector<float>(batch.y, batch.y + y.size()), y) << "epoch " << epoch << " batch " << b;
    }
  }
  // A full epoch still works afterwards.
  EXPECT_EQ(run_epoch(loader, *dataset, 500, epoch_order(2000, true, 2, 500)).sizes.size(), 63u);
}

INSTANTIATE_TEST_SUITE_P(Workers, LoaderWorkers, ::testing::Values(0, 1, 3));

TEST(Loader, SameDataWhateverTheWorkers) {
  const auto dataset = random_dataset(3000);
  std::vector<Epoch> runs;
  for (const int workers : {0, 1, 3}) {
    Loader loader(*dataset, 128, workers);
    for (int64_t epoch = 0; epoch < 3; ++epoch) {
      runs.push_back(run_epoch(loader, *dataset, epoch, epoch_order(3000, true, 8, epoch)));
    }
  }
  for (size_t r = 3; r < runs.size(); ++r) {
    EXPECT_EQ(runs[r].sizes, runs[r % 3].sizes);
    EXPECT_EQ(runs[r].x, runs[r % 3].x) << "run " << r;
    EXPECT_EQ(runs[r].y, runs[r % 3].y) << "run " << r;
  }
}

// Throws for one index; counts the threads that fill and can be slowed down.
class TrickyDataset : public Dataset {
 public:
  explicit TrickyDataset(int64_t bad_index, std::chrono::microseconds delay = {})
      : bad_index_(bad_index), delay_(delay) {}
  int64_t size() const override { return 1000; }
  int64_t input_dim() const override { return 2; }
  int64_t output_dim() const override { return 1; }
  void fill(int64_t epoch, std::span<const int64_t> indices, float* x, float* y) const override {
    {
      std::lock_guard lock(mutex_);
      threads_.insert(std::this_thread::get_id());
    }
    if (delay_.count() > 0) std::this_thread::sleep_for(delay_);
    for (size_t j = 0; j < indices.size(); ++j) {
      if (indices[j] == bad_index_) throw DataError("bad sample " + std::to_string(indices[j]));
      x[2 * j] = static_cast<float>(indices[j]);
      x[2 * j + 1] = static_cast<float>(epoch);
      y[j] = -static_cast<float>(indices[j]);
    }
  }
  std::set<std::thread::id> threads() const {
    std::lock_guard lock(mutex_);
    return threads_;
  }

 private:
  int64_t bad_index_;
  std::chrono::microseconds delay_;
  mutable std::mutex mutex_;
  mutable std::set<std::thread::id> threads_;
};

TEST(Loader, WorkerExceptionIsRethrownByNext) {
  for (const int workers : {0, 1, 3}) {
    TrickyDataset dataset(/*bad_index=*/130);
    Loader loader(dataset, 50, workers);
    loader.start_epoch(0, epoch_order(1000, false, 0, 0));
    Batch batch;
    ASSERT_TRUE(loader.next(batch));
    ASSERT_TRUE(loader.next(batch));
    EXPECT_EQ(batch.x[0], 50.0f);
    try {
      loader.next(batch);  // batch 2 holds index 130
      FAIL() << "no exception with " << workers << " workers";
    } catch (const DataError& e) {
      EXPECT_STREQ(e.what(), "bad sample 130");
    }
    if (workers > 0) EXPECT_FALSE(loader.next(batch));  // the epoch ended with the error
    // The loader stays usable: a new epoch without the bad index runs to its end.
    std::vector<int64_t> good(100);
    std::iota(good.begin(), good.end(), 0);
    loader.start_epoch(1, good);
    int count = 0;
    while (loader.next(batch)) {
      EXPECT_EQ(batch.x[1], 1.0f);
      ++count;
    }
    EXPECT_EQ(count, 2);
  }
}

TEST(Loader, WorkersFillOffTheCallingThread) {
  TrickyDataset dataset(-1, std::chrono::microseconds(200));
  {
    Loader loader(dataset, 10, 3);
    loader.start_epoch(0, epoch_order(1000, true, 0, 0));
    Batch batch;
    int64_t count = 0;
    while (loader.next(batch)) {
      EXPECT_EQ(batch.index, count++);
      EXPECT_EQ(batch.x[1], 0.0f);
    }
    EXPECT_EQ(count, 100);
  }
  const auto threads = dataset.threads();
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u);
  EXPECT_GE(threads.size(), 2u);
}

TEST(Loader, DestroyedMidEpochWithSlowFills) {
  TrickyDataset dataset(-1, std::chrono::microseconds(2000));
  for (int i = 0; i < 5; ++i) {
    Loader loader(dataset, 10, 4);
    loader.start_epoch(0, epoch_order(1000, true, 0, 0));
    Batch batch;
    ASSERT_TRUE(loader.next(batch));
  }
  Loader never_started(dataset, 10, 2);
}

}  // namespace

TEST(LoaderSpans, EveryWorkerFillIsRecordedOnTheLoaderTrack) {
  const auto dataset = make_dataset({.kind = "random", .size = 1000, .input_dim = 4, .output_dim = 1, .seed = 3});
  Loader loader(*dataset, 100, 2);
  loader.record_spans(64);
  std::vector<int64_t> order(1000);
  for (int64_t i = 0; i < 1000; ++i) order[i] = i;
  loader.start_epoch(0, order);
  Batch batch;
  int batches = 0;
  while (loader.next(batch)) ++batches;
  const std::vector<Span> spans = loader.spans();
  EXPECT_EQ(batches, 10);
  EXPECT_EQ(spans.size(), 10u);  // one fill per batch of the epoch
  for (const Span& s : spans) {
    EXPECT_EQ(s.thread, TraceThread::kLoader);
    EXPECT_LE(s.start_ns, s.end_ns);
  }
  EXPECT_EQ(loader.spans_dropped(), 0u);
}

TEST(LoaderSpans, FillsBeyondTheCapacityAreCountedNotKept) {
  const auto dataset = make_dataset({.kind = "random", .size = 1000, .input_dim = 4, .output_dim = 1, .seed = 3});
  Loader loader(*dataset, 100, 3);
  loader.record_spans(4);
  std::vector<int64_t> order(1000);
  for (int64_t i = 0; i < 1000; ++i) order[i] = i;
  loader.start_epoch(0, order);
  Batch batch;
  while (loader.next(batch)) {
  }
  EXPECT_EQ(loader.spans().size(), 4u);
  EXPECT_EQ(loader.spans_dropped(), 6u);
}

// DDPSCOPE_LOADER_DELAY_US (fault injection): every batch takes that much longer to fill, in
// the training thread without workers and in each worker with them; the batches are the same.
TEST_P(LoaderWorkers, AnInjectedDelayMakesEveryBatchSlowerWithTheSameData) {
  const auto dataset = random_dataset(64);
  std::vector<int64_t> all(64);
  std::iota(all.begin(), all.end(), 0);
  Loader plain(*dataset, 8, GetParam());
  const Epoch expected = run_epoch(plain, *dataset, 0, all);
  setenv("DDPSCOPE_LOADER_DELAY_US", "5000", 1);
  Loader slow(*dataset, 8, GetParam());
  unsetenv("DDPSCOPE_LOADER_DELAY_US");
  const auto start = std::chrono::steady_clock::now();
  const Epoch delayed = run_epoch(slow, *dataset, 0, all);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const int fillers = std::max(1, GetParam());  // workers sleep side by side
  EXPECT_GE(seconds, (8 / fillers) * 0.005);    // 8 batches of at least 5 ms each
  EXPECT_EQ(delayed.x, expected.x);
  EXPECT_EQ(delayed.y, expected.y);
}

TEST(Loader, ABadInjectedDelayIsRefusedWithTheVariableNamed) {
  const auto dataset = random_dataset(8);
  for (const char* bad : {"soon", "-1", "10000001", "5us"}) {
    setenv("DDPSCOPE_LOADER_DELAY_US", bad, 1);
    try {
      Loader loader(*dataset, 4, 0);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()), std::string("DDPSCOPE_LOADER_DELAY_US='") + bad +
                                           "' is not a whole number of microseconds in [0, 10000000]");
    }
  }
  unsetenv("DDPSCOPE_LOADER_DELAY_US");
  EXPECT_EQ(loader_delay_from_env(), 0);
}

}  // namespace ddp
