#include "doctor/ablation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "ddpscope/layer_layout.h"
#include "dist/launcher.h"
#include "doctor/findings_catalogue.h"
#include "doctor/workload_counts.h"
#include "train/config/run_config.h"

namespace ddp {
namespace {

// Bytes of optimizer state per parameter: Adam's two moments, SGD's momentum buffer.
double state_bytes_per_parameter(const OptimizerConfig& optimizer) {
  if (optimizer.kind == OptimizerKind::kSgd) return optimizer.momentum != 0 ? 4 : 0;
  return 8;
}

// ZeRO-1 against plain DDP, with what it saves: the optimizer state per rank at N ranks.
void plan_strategy_ablation(const Config& config, int max_devices, std::vector<Ablation>& out) {
  const double state = state_bytes_per_parameter(config.optimizer) * parameter_count(config.model);
  if (state == 0) return;  // nothing to shard
  constexpr double kMiB = 1 << 20;
  if (config.trainer.strategy == Strategy::kDdpZero1) {
    out.push_back({"strategy=ddp",
                   fmt::format("plain DDP: the whole optimizer state ({:.2f} MiB) on every rank, "
                               "gradients all-reduced in buckets during backward",
                               state / kMiB),
                   "Sharding the optimizer state (ZeRO-1)",
                   fmt::format("Use `--strategy ddp`: the whole optimizer state is {:.2f} MiB per rank, and "
                               "sharding it gives up overlapping communication with backward.",
                               state / kMiB),
                   Phase::kCommWait, true, [](Config& c) { c.trainer.strategy = Strategy::kDdp; }});
    return;
  }
  out.push_back({"strategy=ddp_zero1",
                 fmt::format("optimizer state sharded over the ranks (ZeRO-1): {:.2f} MiB per rank at {} devices "
                             "instead of {:.2f} MiB; a reduce-scatter and an all-gather per optimizer step in place "
                             "of the bucketed allreduce",
                             state / max_devices / kMiB, max_devices, state / kMiB),
                 "", "", std::nullopt, true, [](Config& c) { c.trainer.strategy = Strategy::kDdpZero1; }});
}

void plan_monitor_ablation(const TrainerOptions& t, std::vector<Ablation>& out) {
  if (t.monitor_mode == MonitorMode::kPerStep) {
    out.push_back({"monitor-background", "utilization sampled by a background thread instead of a probe in every step",
                   "The utilization probe inside every training step",
                   "Sample utilization in the background (`--monitor-mode background`), never inside the step.",
                   Phase::kMonitor, false, [](Config& c) { c.trainer.monitor_mode = MonitorMode::kBackground; }});
  } else if (t.monitor_interval_ms > 0) {
    out.push_back({"monitor-per-step",
                   "the seed's habit: initialise the utilization probe, read, shut it down, in every step", "", "",
                   std::nullopt, false, [](Config& c) { c.trainer.monitor_mode = MonitorMode::kPerStep; }});
  }
}

// The sizes the seed's author tried: batches, widths, depths (named as changes_work knows them).
void plan_size_ablations(const Config& config, std::vector<Ablation>& out) {
  for (const int64_t batch : {16, 64, 1024}) {
    if (batch == config.data.batch_size) continue;
    out.push_back({fmt::format("batch={}", batch), fmt::format("per-device batch size {}", batch), "", "", std::nullopt,
                   false, [batch](Config& c) { c.data.batch_size = batch; }});
  }
  for (const int64_t width : {64, 1024}) {
    if (width == config.model.hidden_size) continue;
    out.push_back({fmt::format("width={}", width), fmt::format("hidden layers {} wide", width), "", "", std::nullopt,
                   false, [width](Config& c) { c.model.hidden_size = width; }});
  }
  for (const int64_t extra : {4, 8}) {
    out.push_back({fmt::format("layers+{}", extra), fmt::format("{} extra hidden layers", extra), "", "", std::nullopt,
                   false, [extra](Config& c) { c.model.hidden_layers += extra; }});
  }
}

// One GPU: the probe, the CUDA graph against launching each kernel, the precision, the sizes.
// Nothing of a CPU's (loader threads, cores, buckets): the GPU makes its own batches.
std::vector<Ablation> plan_gpu_ablations(const Config& config) {
  std::vector<Ablation> out;
  const TrainerOptions& t = config.trainer;
  plan_monitor_ablation(t, out);
  if (t.no_cuda_graph) {
    out.push_back({"cuda-graph", "the whole optimizer step captured once as a CUDA graph and replayed",
                   "Launching every kernel of the step from the host", kCudaGraphFix, std::nullopt, false,
                   [](Config& c) { c.trainer.no_cuda_graph = false; }});
  } else {
    out.push_back({"no-cuda-graph",
                   "each kernel launched from the host, as an eager framework does, instead of one CUDA graph per step",
                   "", "", std::nullopt, false, [](Config& c) { c.trainer.no_cuda_graph = true; }});
  }
  if (t.precision == Precision::k32True) {
    out.push_back({"precision=tf32", "the GEMMs on TF32 tensor cores (fp32 storage, 10-bit mantissa products)", "", "",
                   std::nullopt, false, [](Config& c) { c.trainer.precision = Precision::kTf32; }});
  } else {
    out.push_back({"precision=32-true", "the GEMMs in full fp32", "", "", std::nullopt, false,
                   [](Config& c) { c.trainer.precision = Precision::k32True; }});
  }
  if (t.precision != Precision::kBf16Mixed) {
    out.push_back({"precision=bf16-mixed",
                   "the GEMMs' inputs rounded to bf16 on the tensor cores (fp32 storage, accumulation and optimizer)",
                   "", "", std::nullopt, false, [](Config& c) { c.trainer.precision = Precision::kBf16Mixed; }});
  }
  plan_size_ablations(config, out);
  return out;
}

}  // namespace

bool changes_work(std::string_view name) {
  return name.starts_with("batch=") || name.starts_with("width=") || name.starts_with("layers+");
}

std::vector<Ablation> plan_ablations(const Config& config, int max_devices) {
  if (config.trainer.accelerator == Accelerator::kCuda) return plan_gpu_ablations(config);
  std::vector<Ablation> out;
  const TrainerOptions& t = config.trainer;
  plan_monitor_ablation(t, out);
  if (config.data.loader_workers == 0) {
    out.push_back({"loader-workers=1", "batches generated by a prefetching thread instead of the training thread",
                   "Generating every batch in the training thread",
                   "Generate batches off the training thread (`--loader-workers 1`).", Phase::kData, false,
                   [](Config& c) { c.data.loader_workers = 1; }});
  } else {
    out.push_back({"loader-workers=0", "batches generated in the training thread, as the seed's DataLoader does", "",
                   "", std::nullopt, false, [](Config& c) { c.data.loader_workers = 0; }});
  }
  // ZeRO-1 reduces once per optimizer step and never during backward: no sync or overlap to change.
  const bool zero1 = t.strategy == Strategy::kDdpZero1;
  if (max_devices > 1 && t.accumulate_grad_batches > 1 && !zero1) {
    if (t.sync_every_micro_batch) {
      out.push_back({"no_sync", "gradients communicated only on the micro-batch that steps the optimizer",
                     "All-reducing gradients on every micro-batch during accumulation",
                     "Keep Lightning's no_sync during accumulation (drop `--sync-every-micro-batch`).",
                     Phase::kCommWait, true, [](Config& c) { c.trainer.sync_every_micro_batch = false; }});
    } else {
      out.push_back({"sync-every-micro-batch", "gradients all-reduced on every micro-batch (no_sync off)", "", "",
                     std::nullopt, true, [](Config& c) { c.trainer.sync_every_micro_batch = true; }});
    }
  }
  if (max_devices > 1 && !zero1) {
    if (t.no_overlap) {
      out.push_back({"overlap", "gradient buckets all-reduced during backward",
                     "Communicating gradients only after backward",
                     "Overlap communication with backward (drop `--no-overlap`).", Phase::kCommWait, true,
                     [](Config& c) { c.trainer.no_overlap = false; }});
    } else {
      out.push_back({"no-overlap", "one allreduce after backward instead of per bucket during it", "", "", std::nullopt,
                     true, [](Config& c) { c.trainer.no_overlap = true; }});
    }
  }
  if (max_devices > 1 && !t.sync_every_micro_batch) plan_strategy_ablation(config, max_devices, out);
  plan_size_ablations(config, out);
  for (Ablation& a : plan_catalogue_ablations(config, max_devices, available_cores())) out.push_back(std::move(a));
  return out;
}

std::vector<double> bucket_sweep_caps_mb(const Config& config, int devices) {
  WorkloadConfig workload = workload_for(config, devices);
  const WorkloadCounts counts = count_workload(workload);
  const double gradient_mb = static_cast<double>(counts.parameters) * 4 / (1 << 20);
  if (counts.parameters * 4 < kBucketSweepMinGradientBytes) return {};
  const auto buckets_at = [&](double cap_mb) {
    workload.bucket_cap_mb = cap_mb;
    return static_cast<int>(count_workload(workload).bucket_bytes.size());
  };
  const int own = buckets_at(config.trainer.bucket_cap_mb);
  // Buckets are whole layers, so a count is reachable only near some caps: scan caps of two
  // significant digits, largest first, and keep the largest cap that comes closest to each target.
  std::vector<double> caps;
  std::vector<int> counts_taken = {own};
  for (const int target : {2, 4, 8}) {
    double best_cap = 0;
    int best = 0;
    for (double cap = gradient_mb; cap >= gradient_mb / 64; cap /= 1.1) {
      const double rounded = std::round(cap * 10) / 10;
      if (rounded <= 0) break;
      const int n = buckets_at(rounded);
      if (best == 0 || std::abs(n - target) < std::abs(best - target)) {
        best = n;
        best_cap = rounded;
      }
    }
    if (best < 2 || std::find(counts_taken.begin(), counts_taken.end(), best) != counts_taken.end()) continue;
    counts_taken.push_back(best);
    caps.push_back(best_cap);
  }
  return caps;
}

std::vector<Ablation> plan_catalogue_ablations(const Config& config, int max_devices, int cores) {
  std::vector<Ablation> out;
  const TrainerOptions& t = config.trainer;
  const int ranks_per_host = std::max(1, (max_devices + t.num_nodes - 1) / std::max(1, t.num_nodes));
  const int fair = std::max(1, cores / ranks_per_host);
  if (t.threads_per_device > fair) {
    out.push_back(
        {fmt::format("threads-per-device={}", fair),
         fmt::format("{} threads per device, the fair share of {} cores among {} ranks", fair, cores, ranks_per_host),
         "", "", std::nullopt, t.threads_per_device <= cores,
         [fair](Config& c) { c.trainer.threads_per_device = fair; }});
  }
  const int workers = config.data.loader_workers;
  if (workers > 0 && cores >= ranks_per_host * (t.threads_per_device + workers + 1)) {
    out.push_back({fmt::format("loader-workers={}", workers + 1), fmt::format("{} loader workers", workers + 1), "", "",
                   std::nullopt, false, [workers](Config& c) { c.data.loader_workers = workers + 1; }});
  }
  if (max_devices > 1 && t.strategy != Strategy::kDdpZero1) {  // ZeRO-1 has no buckets
    for (const double cap : bucket_sweep_caps_mb(config, max_devices)) {
      out.push_back({fmt::format("bucket_cap_mb={}", cap), fmt::format("gradient buckets of at most {} MB", cap), "",
                     "", std::nullopt, true, [cap](Config& c) { c.trainer.bucket_cap_mb = cap; }});
    }
  }
  return out;
}

}  // namespace ddp
