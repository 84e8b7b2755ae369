// On a GPU machine: the seed's training step on the device (gpu/train_step_gpu.h) against the
// same step on the host (the random dataset's samples, the Mlp, the MSE gradient with
// Lightning's 1/k, the host optimizers), over two shuffled epochs whose last step is shorter;
// validation against the host's MSE over the dataset in order;
// a captured CUDA graph replaying the eager kernels' bits; no device memory taken once every
// step shape is captured; a resumed run making the uninterrupted one's bits; a NaN weight
// making the losses non-finite; timed steps changing no bit. Skipped where no GPU is visible.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <vector>

#include "data/random_dataset.h"
#include "data/sampler.h"
#include "ddpscope/mlp.h"
#include "ddpscope/optimizer.h"
#include "ddpscope/random.h"
#include "ddpscope/workspace.h"
#include "gpu/train_step_gpu.h"
#include "gpu_test_support.h"
#include "support/float_bits.h"
#include "tensor/kernels.h"
#include "train/loop/epoch_plan.h"

namespace ddp {
namespace {

constexpr uint64_t kSeed = 42;
constexpr int64_t kSamples = 200, kBatch = 16, kAccumulate = 3;  // 13 micro-batches: the last has 8 samples
const MlpShape kShape{.input_dim = 10, .hidden_size = 64, .hidden_layers = 2, .output_dim = 3};

// The sizes of each optimizer step's micro-batches in one epoch: 4 steps of 3 x 16, then 1 x 8.
std::vector<std::vector<int64_t>> epoch_steps() {
  return step_micro_batch_sizes(kSamples, kBatch, plan_epoch(kSamples, kBatch, {}, kAccumulate), kAccumulate);
}

std::vector<float> initial_params() {
  Mlp init(kShape);
  init.init_like_pytorch(7);
  return {init.params().begin(), init.params().end()};
}

GpuStepSpec config(const OptimizerConfig& optimizer, bool cuda_graph) {
  return {.shape = kShape,
          .optimizer = optimizer,
          .batch_size = kBatch,
          .accumulate = kAccumulate,
          .data = {.kind = GpuDataKind::kRandom, .size = kSamples, .key = stream_key(kSeed, kStreamData)},
          .max_epoch_steps = static_cast<int64_t>(epoch_steps().size()),
          .cuda_graph = cuda_graph};
}

struct Trained {
  std::vector<float> params;
  std::vector<std::vector<float>> state;
  std::vector<double> sum_squares;  // per micro-batch, the epochs one after the other
};

// Epochs first .. first + epochs - 1 on gpu, each of epoch_steps().
void run_epochs(GpuTrainStep& gpu, int first, int epochs, Trained& out) {
  const auto plan = epoch_steps();
  const auto steps = static_cast<int64_t>(plan.size());
  for (int epoch = first; epoch < first + epochs; ++epoch) {
    gpu.start_epoch(epoch, epoch_order(kSamples, true, kSeed, epoch), epoch * steps, steps);
    for (const auto& sizes : plan) gpu.step(sizes);
    for (const double sum : gpu.epoch_sum_squares()) out.sum_squares.push_back(sum);
  }
  out.params = gpu.params();
  out.state = gpu.optimizer_state();
}

Trained train_on_gpu(const OptimizerConfig& optimizer, bool cuda_graph, int epochs) {
  GpuTrainStep gpu(config(optimizer, cuda_graph), initial_params());
  Trained out;
  run_epochs(gpu, 0, epochs, out);
  return out;
}

// The same epochs on the host, as the Trainer runs them.
Trained train_on_host(const OptimizerConfig& optimizer, int epochs) {
  Mlp mlp(kShape);
  const std::vector<float> init = initial_params();
  std::copy(init.begin(), init.end(), mlp.params().begin());
  const std::unique_ptr<Optimizer> opt = make_optimizer(optimizer, mlp.num_params());
  const RandomDataset data(kSamples, kShape.input_dim, kShape.output_dim, kSeed);
  Workspace work(kShape, kBatch);
  std::vector<float> x(kBatch * kShape.input_dim), y(kBatch * kShape.output_dim);
  Trained out;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    const std::vector<int64_t> order = epoch_order(kSamples, true, kSeed, epoch);
    int64_t start = 0;
    for (const auto& sizes : epoch_steps()) {
      mlp.zero_grads();
      for (const int64_t b : sizes) {
        data.fill(epoch, std::span<const int64_t>(order).subspan(start, b), x.data(), y.data());
        start += b;
        const float* pred = mlp.forward(x.data(), b, work);
        out.sum_squares.push_back(mse_loss(pred, y.data(), b, kShape.output_dim) * b * kShape.output_dim);
        mse_loss_gradient(pred, y.data(), work.output_gradient(), b, kShape.output_dim, 1.0f / kAccumulate);
        mlp.backward(x.data(), b, work);
      }
      opt->step(mlp.params(), mlp.grads());
    }
  }
  out.params.assign(mlp.params().begin(), mlp.params().end());
  for (const auto& [name, buffer] : opt->state()) out.state.emplace_back(buffer.begin(), buffer.end());
  return out;
}

void expect_close(const std::vector<float>& gpu, const std::vector<float>& host, double tolerance, const char* what) {
  ASSERT_EQ(gpu.size(), host.size()) << what;
  double largest = 0;
  for (const float value : host) largest = std::max(largest, std::abs(static_cast<double>(value)));
  ASSERT_GT(largest, 0.0) << what;
  for (std::size_t i = 0; i < gpu.size(); ++i) {
    ASSERT_NEAR(gpu[i], host[i], tolerance * largest) << what << "[" << i << "]";
  }
}

void expect_like_host(const OptimizerConfig& optimizer) {
  const Trained gpu = train_on_gpu(optimizer, /*cuda_graph=*/true, 2);
  const Trained host = train_on_host(optimizer, 2);
  expect_close(gpu.params, host.params, 1e-5, "params");
  ASSERT_EQ(gpu.state.size(), host.state.size());
  for (std::size_t i = 0; i < gpu.state.size(); ++i) expect_close(gpu.state[i], host.state[i], 1e-5, "state");
  ASSERT_EQ(gpu.sum_squares.size(), host.sum_squares.size());
  for (std::size_t i = 0; i < host.sum_squares.size(); ++i) {
    EXPECT_NEAR(gpu.sum_squares[i], host.sum_squares[i], 1e-6 * host.sum_squares[i]) << "micro-batch " << i;
  }
}

TEST(GpuTrainStep, TenSgdMomentumStepsAreTheHostsWithin1e5) {
  DDP_REQUIRE_GPU();
  expect_like_host({.kind = OptimizerKind::kSgd, .lr = 0.05, .momentum = 0.9, .weight_decay = 0.01});
}

// eps = 1 keeps Adam's update smooth in the gradient (a gradient near 0 cannot flip its
// sign's whole lr step), so GEMM rounding stays rounding; the per-step bias corrections, read
// from the device's table, still change every step.
TEST(GpuTrainStep, TenAdamWStepsAreTheHostsWithin1e5) {
  DDP_REQUIRE_GPU();
  expect_like_host({.kind = OptimizerKind::kAdamW, .lr = 0.01, .weight_decay = 0.1, .eps = 1.0});
}

TEST(GpuTrainStep, TheCapturedGraphMakesTheEagerKernelsBits) {
  DDP_REQUIRE_GPU();
  const OptimizerConfig adam{.kind = OptimizerKind::kAdam, .lr = 1e-3};
  const Trained graph = train_on_gpu(adam, true, 3), eager = train_on_gpu(adam, false, 3);
  ASSERT_EQ(graph.params.size(), eager.params.size());
  for (std::size_t i = 0; i < graph.params.size(); ++i) {
    ASSERT_EQ(testing::float_bits(graph.params[i]), testing::float_bits(eager.params[i])) << "params[" << i << "]";
  }
  ASSERT_EQ(graph.sum_squares.size(), eager.sum_squares.size());
  for (std::size_t i = 0; i < eager.sum_squares.size(); ++i) {  // summed by atomics, in any order
    EXPECT_NEAR(graph.sum_squares[i], eager.sum_squares[i], 1e-12 * eager.sum_squares[i]);
  }
}

// The host-memory transport's two-part step, with an average over one rank (the
// gradients unchanged), makes the one-graph step's bits; it is handed each step's gradients
// once, with values in them.
TEST(GpuTrainStep, TheStepThroughHostMemoryMakesTheOneGraphStepsBits) {
  DDP_REQUIRE_GPU();
  const OptimizerConfig adam{.kind = OptimizerKind::kAdam, .lr = 1e-3};
  const Trained graph = train_on_gpu(adam, true, 2);
  for (const bool cuda_graph : {true, false}) {
    GpuStepSpec through_host = config(adam, cuda_graph);
    int64_t calls = 0;
    double largest = 0;
    through_host.reduce_gradients = [&](std::span<float> grads) {
      ++calls;
      for (const float g : grads) largest = std::max(largest, std::abs(static_cast<double>(g)));
    };
    GpuTrainStep gpu(through_host, initial_params());
    Trained out;
    run_epochs(gpu, 0, 2, out);
    EXPECT_EQ(calls, 2 * static_cast<int64_t>(epoch_steps().size()));
    EXPECT_GT(largest, 0.0);
    ASSERT_EQ(out.params.size(), graph.params.size());
    for (std::size_t i = 0; i < out.params.size(); ++i) {
      ASSERT_EQ(testing::float_bits(out.params[i]), testing::float_bits(graph.params[i])) << "params[" << i << "]";
    }
  }
}

// A run stopped after an epoch and resumed from its parameters and optimizer state (as a
// checkpoint holds them) makes the uninterrupted run's bits.
TEST(GpuTrainStep, AResumedRunMakesTheUninterruptedRunsBits) {
  DDP_REQUIRE_GPU();
  const OptimizerConfig adam{.kind = OptimizerKind::kAdam, .lr = 1e-3};
  const Trained whole = train_on_gpu(adam, true, 2), first = train_on_gpu(adam, true, 1);
  GpuTrainStep resumed_gpu(config(adam, true), first.params);
  resumed_gpu.load_optimizer_state({first.state.begin(), first.state.end()});
  Trained resumed;
  run_epochs(resumed_gpu, 1, 1, resumed);
  for (std::size_t i = 0; i < whole.params.size(); ++i) {
    ASSERT_EQ(testing::float_bits(resumed.params[i]), testing::float_bits(whole.params[i])) << "params[" << i << "]";
  }
  ASSERT_EQ(resumed.state.size(), 2U);
  for (std::size_t i = 0; i < whole.state[1].size(); ++i) {
    ASSERT_EQ(testing::float_bits(resumed.state[1][i]), testing::float_bits(whole.state[1][i]))
        << "exp_avg_sq[" << i << "]";
  }
}

TEST(GpuTrainStep, TakesNoDeviceMemoryOnceEveryStepShapeIsCaptured) {
  DDP_REQUIRE_GPU();
  GpuTrainStep gpu(config({.kind = OptimizerKind::kAdam}, true), initial_params());
  const auto plan = epoch_steps();
  std::size_t free_after[4] = {}, total = 0;
  for (int epoch = 0; epoch < 4; ++epoch) {
    gpu.start_epoch(epoch, epoch_order(kSamples, true, kSeed, epoch), epoch * 5, static_cast<int64_t>(plan.size()));
    for (const auto& sizes : plan) gpu.step(sizes);
    gpu.epoch_sum_squares();
    ASSERT_EQ(cudaMemGetInfo(&free_after[epoch], &total), cudaSuccess);
  }
  EXPECT_EQ(gpu.graphs_captured(), 2);  // 3 x 16, and the epoch's last 1 x 8
  EXPECT_EQ(free_after[2], free_after[1]);
  EXPECT_EQ(free_after[3], free_after[1]);
}

// Validation reads the dataset in order with the epoch's data, as the host's does; its second
// run (the captured graph) sums the same.
TEST(GpuTrainStep, ValidationIsTheHostsMseOverTheDatasetInOrder) {
  DDP_REQUIRE_GPU();
  const std::vector<float> params = initial_params();
  GpuTrainStep gpu(config({.kind = OptimizerKind::kSgd, .lr = 0.01}, true), params);
  Mlp mlp(kShape);
  std::copy(params.begin(), params.end(), mlp.params().begin());
  const RandomDataset data(kSamples, kShape.input_dim, kShape.output_dim, kSeed);
  Workspace work(kShape, kBatch);
  std::vector<float> x(kBatch * kShape.input_dim), y(kBatch * kShape.output_dim);
  for (const int64_t epoch : {0, 3}) {
    double host = 0;
    for (int64_t start = 0; start < kSamples; start += kBatch) {
      const int64_t b = std::min(kBatch, kSamples - start);
      std::vector<int64_t> indices(static_cast<std::size_t>(b));
      std::iota(indices.begin(), indices.end(), start);
      data.fill(epoch, indices, x.data(), y.data());
      host += mse_loss(mlp.forward(x.data(), b, work), y.data(), b, kShape.output_dim) * b * kShape.output_dim;
    }
    const GpuLossTotals eager = gpu.validate(epoch, kSamples), graph = gpu.validate(epoch, kSamples);
    EXPECT_FALSE(eager.nonfinite);
    EXPECT_NEAR(eager.sum_squares, host, 1e-6 * host) << "epoch " << epoch;
    EXPECT_NEAR(graph.sum_squares, eager.sum_squares, 1e-12 * host) << "epoch " << epoch;
  }
}

// Timing a step (CUDA events; inside the graph, its event-record nodes) changes none of its
// bits, and its marks come in order once the step is steady: never the run's first step, and
// with graphs never a shape's eager first run.
TEST(GpuTrainStep, TimedStepsMakeTheSameBitsAndOrderedMarks) {
  DDP_REQUIRE_GPU();
  for (const bool cuda_graph : {true, false}) {
    SCOPED_TRACE(cuda_graph ? "graph" : "eager");
    const OptimizerConfig adam{.kind = OptimizerKind::kAdam};
    const Trained plain = train_on_gpu(adam, cuda_graph, 2);
    GpuTrainStep gpu(config(adam, cuda_graph), initial_params());
    const auto plan = epoch_steps();
    const auto steps = static_cast<int64_t>(plan.size());
    std::vector<DeviceStepMarks> taken;
    Trained timed;
    for (int epoch = 0; epoch < 2; ++epoch) {
      gpu.start_epoch(epoch, epoch_order(kSamples, true, kSeed, epoch), epoch * steps, steps);
      for (const auto& sizes : plan) {
        gpu.step(sizes, /*timed=*/true);
        if (std::optional<DeviceStepMarks> marks = gpu.take_timed_step()) taken.push_back(*marks);
      }
      for (const double sum : gpu.epoch_sum_squares()) timed.sum_squares.push_back(sum);
    }
    const std::vector<float> params = gpu.params();
    ASSERT_EQ(params.size(), plain.params.size());
    for (std::size_t i = 0; i < params.size(); ++i) {
      ASSERT_EQ(testing::float_bits(params[i]), testing::float_bits(plain.params[i])) << "params[" << i << "]";
    }
    ASSERT_EQ(timed.sum_squares.size(), plain.sum_squares.size());
    for (std::size_t i = 0; i < plain.sum_squares.size(); ++i) {  // summed by atomics, in any order
      EXPECT_NEAR(timed.sum_squares[i], plain.sum_squares[i], 1e-12 * plain.sum_squares[i]);
    }
    // Steps of 3 x 16 are timed from the second (eager) or from the third (graph: the timed
    // graph's first run is eager); the epochs' last step of 1 x 8 from its second run (graph).
    ASSERT_GE(taken.size(), 5U);
    for (const DeviceStepMarks& marks : taken) {
      ASSERT_TRUE(marks.seconds.size() == device_step_mark_count(3) ||
                  marks.seconds.size() == device_step_mark_count(1));
      EXPECT_TRUE(std::is_sorted(marks.seconds.begin(), marks.seconds.end()));
      const DeviceStepTimes t = device_step_times(marks);
      EXPECT_GT(t.forward, 0);
      EXPECT_GT(t.backward, 0);
      EXPECT_LT(marks.seconds.back() - marks.seconds.front(), 1.0);  // a step of microseconds
    }
  }
}

TEST(GpuTrainStep, ANanWeightMakesTheMicroBatchesLossNonFinite) {
  DDP_REQUIRE_GPU();
  std::vector<float> params = initial_params();
  params[3] = std::numeric_limits<float>::quiet_NaN();  // a first-layer weight
  GpuTrainStep gpu(config({.kind = OptimizerKind::kSgd, .lr = 0.01}, true), params);
  gpu.start_epoch(0, epoch_order(kSamples, true, kSeed, 0), 0, 5);
  gpu.step(epoch_steps().front());
  const std::vector<double> sums = gpu.epoch_sum_squares();
  ASSERT_EQ(sums.size(), 3U);
  for (const double sum : sums) EXPECT_FALSE(std::isfinite(sum));
}

}  // namespace
}  // namespace ddp
