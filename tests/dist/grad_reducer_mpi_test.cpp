// The gradient reducer in a real world of 2 and 3 ranks.
#include "dist/grad_reducer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <vector>

#include "dist/mpi_communicator.h"
#include "tensor/kernels.h"

namespace ddp {
namespace {

// Layers in floats: 704, 4160, 4160, 65. Caps of 20,000 bytes with a 1,000-byte first
// bucket give three buckets: {layer 3}, {layers 2}, {layers 1, 0}.
const MlpShape kShape{.input_dim = 10, .hidden_size = 64, .hidden_layers = 3, .output_dim = 1};
constexpr int64_t kBatch = 8;
GradReducerOptions small_buckets(bool overlap) {
  return {.bucket_cap_bytes = 20000, .first_bucket_cap_bytes = 1000, .overlap = overlap};
}

// Small integers: their sums are exact in any order, so results can be compared bitwise.
void fill_integer_grads(Mlp& model, int rank) {
  std::span<float> g = model.grads();
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = static_cast<float>((rank + 1) * static_cast<int>(i % 7));
}

void report_all_layers(GradReducer& reducer, const Mlp& model) {
  for (int64_t l = model.shape().num_layers() - 1; l >= 0; --l) reducer.on_layer_done(l);
}

// A rank-dependent micro-batch: x (kBatch, 10), y (kBatch, 1).
struct Batch {
  std::vector<float> x, y;
};
Batch make_batch(int rank, int step) {
  Batch b{std::vector<float>(kBatch * 10), std::vector<float>(kBatch)};
  for (std::size_t i = 0; i < b.x.size(); ++i) b.x[i] = std::sin(0.37f * i + 1.3f * rank + 0.71f * step);
  for (std::size_t i = 0; i < b.y.size(); ++i) b.y[i] = std::cos(0.53f * i + 0.9f * rank + 0.31f * step);
  return b;
}

// micro-batches of real forward/backward with accumulation; returns the reducer's stats.
// forward and the loss gradient, scaled by scale, ready for backward.
void forward_and_loss(const Mlp& model, Workspace& work, const Batch& batch, float scale) {
  model.forward(batch.x.data(), kBatch, work);
  mse_loss_gradient(work.output(), batch.y.data(), work.output_gradient(), kBatch, 1, scale);
}

AllreduceStats train_micro_batches(Communicator& comm, Mlp& model, GradReducer& reducer, int steps, int accumulate,
                                   bool sync_every) {
  Workspace work(kShape, kBatch);
  for (int step = 0; step < steps; ++step) {
    model.zero_grads();
    for (int micro = 0; micro < accumulate; ++micro) {
      const Batch batch = make_batch(comm.rank(), step * accumulate + micro);
      forward_and_loss(model, work, batch, 1.0f / accumulate);
      reducer.begin_backward(sync_every || micro + 1 == accumulate);
      model.backward(batch.x.data(), kBatch, work, reducer.layer_hook());
      reducer.finish();
    }
  }
  return reducer.stats();
}

TEST(GradReducer, EveryRankHoldsTheAverageAfterFinish) {
  auto comm = make_mpi_communicator();
  const int w = comm->size();
  for (bool overlap : {true, false}) {
    Mlp model(kShape);
    GradReducer reducer(*comm, model, small_buckets(overlap));
    ASSERT_EQ(reducer.num_buckets(), 3u);
    fill_integer_grads(model, comm->rank());
    reducer.begin_backward(true);
    report_all_layers(reducer, model);
    reducer.finish();
    const std::span<const float> g = model.grads();
    for (std::size_t i = 0; i < g.size(); ++i) {
      // mean over ranks of (r + 1) * (i % 7) = (w + 1) / 2 * (i % 7)
      ASSERT_FLOAT_EQ(g[i], 0.5f * static_cast<float>((w + 1) * static_cast<int>(i % 7))) << "i=" << i;
    }
    const AllreduceStats stats = reducer.stats();
    EXPECT_EQ(stats.calls, overlap ? 3 : 1);
    EXPECT_EQ(stats.bytes, static_cast<int64_t>(model.num_params() * sizeof(float)));
    EXPECT_GE(stats.seconds, 0.0);
  }
}

TEST(GradReducer, CallsAreSyncsTimesBucketsAndNoSyncMicroBatchesSendNothing) {
  auto comm = make_mpi_communicator();
  Mlp model(kShape);
  model.init_like_pytorch(7);
  GradReducer reducer(*comm, model, small_buckets(true));
  const int64_t buckets = static_cast<int64_t>(reducer.num_buckets());
  const int64_t bytes = static_cast<int64_t>(model.num_params() * sizeof(float));
  // 4 optimizer steps of 3 micro-batches: only the last micro-batch of each step syncs.
  AllreduceStats stats = train_micro_batches(*comm, model, reducer, 4, 3, false);
  EXPECT_EQ(stats.calls, 4 * buckets);
  EXPECT_EQ(stats.bytes, 4 * bytes);
  // --sync-every-micro-batch: every micro-batch.
  stats = train_micro_batches(*comm, model, reducer, 2, 3, true);
  EXPECT_EQ(stats.calls, 4 * buckets + 6 * buckets);
  // A no_sync micro-batch alone: nothing at all.
  const Batch batch = make_batch(comm->rank(), 0);
  Workspace work(kShape, kBatch);
  forward_and_loss(model, work, batch, 1.0f);
  reducer.begin_backward(false);
  EXPECT_FALSE(reducer.syncing());
  model.backward(batch.x.data(), kBatch, work, reducer.layer_hook());
  reducer.finish();
  EXPECT_EQ(reducer.stats().calls, 10 * buckets);
}

TEST(GradReducer, OverlapAndNoOverlapGiveIdenticalGradientsOnEveryRank) {
  auto comm = make_mpi_communicator();
  Mlp a(kShape), b(kShape);
  a.init_like_pytorch(11);
  b.init_like_pytorch(11);
  GradReducer overlapped(*comm, a, small_buckets(true));
  GradReducer after_backward(*comm, b, small_buckets(false));
  train_micro_batches(*comm, a, overlapped, 2, 2, false);
  train_micro_batches(*comm, b, after_backward, 2, 2, false);
  const std::span<const float> ga = a.grads(), gb = b.grads();
  float largest = 0;
  for (float v : gb) largest = std::max(largest, std::fabs(v));
  ASSERT_GT(largest, 0);
  for (std::size_t i = 0; i < ga.size(); ++i) {
    // Bucketed and whole-buffer allreduces may add three ranks' values in different
    // orders: a few float roundings of the largest terms.
    ASSERT_NEAR(ga[i], gb[i], 1e-6 * largest) << "i=" << i;
  }
  // Every rank ends with the same bits.
  uint64_t hash = 1469598103934665603ull;
  for (float v : ga) hash = (hash ^ std::bit_cast<uint32_t>(v)) * 1099511628211ull;
  for (uint64_t h : comm->allgather(hash)) EXPECT_EQ(h, hash);
}

// Alone, the reducer is a no-op the training step can always call: no buckets, no layer
// hook (backward makes no call per layer), never syncing, nothing sent, gradients untouched.
TEST(GradReducer, OneRankWorldIsANoOpThatLeavesGradientsAlone) {
  auto comm = make_local_communicator();
  Mlp model(kShape);
  GradReducer reducer(*comm, model, small_buckets(true));
  EXPECT_EQ(reducer.num_buckets(), 0u);
  EXPECT_FALSE(reducer.layer_hook());
  fill_integer_grads(model, 0);
  reducer.begin_backward(true);
  EXPECT_FALSE(reducer.syncing());
  report_all_layers(reducer, model);
  reducer.finish();
  EXPECT_EQ(reducer.stats().calls, 0);
  EXPECT_EQ(reducer.stats().bytes, 0);
  EXPECT_EQ(model.grads()[8], 1.0f);  // (0 + 1) * (8 % 7)
}

}  // namespace
}  // namespace ddp
