// The seed's optimizer step on one GPU (gpu/train_step_gpu.h), captured as a CUDA graph
// against the same kernels launched one by one (what an eager framework pays per
// launch), in fp32 and TF32. The seed's shape and data: 5000 samples, batch 256, 3
// micro-batches per step (7 steps an epoch, the last of 2), Adam; an epoch ends with one
// synchronisation, as a run reads its loss there.
//
//   build/release/bench/gpu_step_bench [epochs]     # default 200, the seed's
//
// Prints one JSON line (bench/gpu/check.sh reads it): microseconds per optimizer step, the
// median over epochs, for each variant. Exit 0; 3 when no GPU is visible (the reason on
// stderr); 2 for a bad argument.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "data/sampler.h"
#include "ddpscope/error.h"
#include "ddpscope/mlp.h"
#include "ddpscope/random.h"
#include "gpu/train_step_gpu.h"
#include "gpu/visible_gpus.h"
#include "train/loop/epoch_plan.h"

namespace ddp {
namespace {

constexpr int64_t kSamples = 5000, kBatch = 256, kAccumulate = 3;

std::vector<std::vector<int64_t>> seed_epoch_steps() {
  return step_micro_batch_sizes(kSamples, kBatch, plan_epoch(kSamples, kBatch, {}, kAccumulate), kAccumulate);
}

// Median microseconds per optimizer step over epochs (each epoch timed from its start to
// the loss read that ends it).
double step_us(Precision precision, bool cuda_graph, int epochs) {
  const MlpShape shape;  // the seed's: 10 -> 3 x 256 -> 1
  Mlp init(shape);
  init.init_like_pytorch(42);
  const auto plan = seed_epoch_steps();
  const GpuStepSpec config{.shape = shape,
                           .optimizer = {.kind = OptimizerKind::kAdam, .lr = 1e-3},
                           .precision = precision,
                           .batch_size = kBatch,
                           .accumulate = kAccumulate,
                           .data = {.kind = GpuDataKind::kRandom, .size = kSamples, .key = stream_key(42, kStreamData)},
                           .max_epoch_steps = static_cast<int64_t>(plan.size()),
                           .cuda_graph = cuda_graph};
  GpuTrainStep gpu(config, init.params());
  std::vector<double> per_step;
  for (int epoch = 0; epoch < epochs; ++epoch) {
    const std::vector<int64_t> order = epoch_order(kSamples, true, 42, epoch);
    const auto start = std::chrono::steady_clock::now();
    gpu.start_epoch(epoch, order, epoch * static_cast<int64_t>(plan.size()), static_cast<int64_t>(plan.size()));
    for (const auto& sizes : plan) gpu.step(sizes);
    gpu.epoch_sum_squares();
    const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
    if (epoch > 0)
      per_step.push_back(took.count() / static_cast<double>(plan.size()));  // the first makes plans, graphs
  }
  std::sort(per_step.begin(), per_step.end());
  return per_step.empty() ? 0.0 : per_step[per_step.size() / 2];
}

int run(int argc, char** argv) {
  int epochs = 200;
  if (argc > 1) {
    char* end = nullptr;
    const long value = std::strtol(argv[1], &end, 10);
    if (*end != '\0' || value < 2 || value > 100000) {
      std::fprintf(stderr, "gpu_step_bench: epochs '%s' is not accepted; expected an integer from 2 to 100000\n",
                   argv[1]);
      return 2;
    }
    epochs = static_cast<int>(value);
  }
  const VisibleGpus gpus = visible_gpus();
  if (gpus.devices.empty()) {
    std::fprintf(stderr, "gpu_step_bench: not run: no GPU visible: %s\n", gpus.none_reason.c_str());
    return 3;
  }
  const double graph = step_us(Precision::k32True, true, epochs), eager = step_us(Precision::k32True, false, epochs);
  const double graph_tf32 = step_us(Precision::kTf32, true, epochs);
  std::printf(
      "{\"gpu\": \"%s\", \"epochs\": %d, \"steps_per_epoch\": %zu, \"graph_step_us\": %.2f, \"eager_step_us\": %.2f, "
      "\"graph_tf32_step_us\": %.2f, \"eager_over_graph\": %.3f}\n",
      gpus.devices.front().name.c_str(), epochs, seed_epoch_steps().size(), graph, eager, graph_tf32, eager / graph);
  return 0;
}

}  // namespace
}  // namespace ddp

int main(int argc, char** argv) {
  try {
    return ddp::run(argc, argv);
  } catch (const ddp::Error& error) {
    std::fprintf(stderr, "gpu_step_bench: %s\n", error.what());
    return 1;
  }
}
