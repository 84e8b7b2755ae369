#include "doctor/findings_gpu.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "doctor/ablation.h"

namespace ddp {

GpuStepParts gpu_step_parts(const ModelParameters& m, const WorkloadConfig& w) {
  const WorkloadCounts n = count_workload(w);
  GpuStepParts p;
  p.micro_batches = w.accumulate_grad_batches;
  p.launches = p.micro_batches * n.kernels_per_micro_batch + n.kernels_per_optimizer_step;
  const double k = static_cast<double>(p.micro_batches);
  const double b = static_cast<double>(w.batch_size);
  p.arithmetic = m.flops_per_second > 0 ? k * b * n.training_flops_per_sample / m.flops_per_second : 0.0;
  p.launch_fixed = k * fixed_seconds_per_micro_batch(m, w, n);
  p.data = k * (m.data_seconds_per_micro_batch + b * m.data_seconds_per_sample);
  p.optimizer = m.optimizer_seconds_per_step + static_cast<double>(n.parameters) * m.optimizer_seconds_per_parameter;
  p.host = m.host_seconds_per_step;
  if (!w.cuda_graph) p.eager = static_cast<double>(p.launches) * m.eager_seconds_per_kernel;
  if (w.monitor_per_step) p.monitor = k * m.monitor_seconds_per_micro_batch;
  return p;
}

void gpu_step_finding(const FindingInputs& in, std::vector<Finding>& out) {
  if (!in.workload.on_gpu || in.device_runs.empty() || !in.device_runs.front()->ok) return;
  const RunRecord& run = *in.device_runs.front();
  const GpuStepParts p = gpu_step_parts(in.model, in.workload);  // one GPU: the workload is the run's
  const double overhead = p.total() - p.arithmetic;
  if (!(p.total() > 0) || overhead / p.total() <= kGpuOverheadMinShare) return;

  const std::pair<double, const char*> parts[] = {
      {p.monitor,
       "Sample utilization in the background (`--monitor-mode background`): the per-step probe "
       "initialises and shuts down NVML inside every step."},
      {p.eager, kCudaGraphFix},
      {p.launch_fixed + p.data + p.optimizer + p.host,
       "Give each launch more work (`--batch-size`, a wider model): a launch costs the same whatever its size, "
       "and N GPUs only pay off once the arithmetic outweighs it."},
  };
  const auto largest = std::max_element(std::begin(parts), std::end(parts),
                                        [](const auto& a, const auto& b) { return a.first < b.first; });
  const auto us = [](double seconds) { return 1e6 * seconds; };
  const int64_t steps = std::max<int64_t>(1, run.optimizer_steps());
  Finding f;
  f.title =
      fmt::format("A GPU step costs {:.1f} µs, {:.1f} µs of it arithmetic: {:.0f} % goes to launches, the host{}",
                  us(p.total()), us(p.arithmetic), 100 * overhead / p.total(), p.monitor > 0 ? " and the probe" : "");
  std::string detail = fmt::format(
      "One optimizer step ({} micro-batch{} of {} samples, {} launches): {:.1f} µs of GEMM arithmetic at the fitted "
      "{:.1f} TFLOP/s, {:.1f} µs fixed in the forward and backward launches, {:.1f} µs generating the batches, "
      "{:.1f} µs in the optimizer, {:.1f} µs where the device waited for the host",
      p.micro_batches, p.micro_batches == 1 ? "" : "es", in.workload.batch_size, p.launches, us(p.arithmetic),
      in.model.flops_per_second / 1e12, us(p.launch_fixed), us(p.data), us(p.optimizer), us(p.host));
  if (p.eager > 0) detail += fmt::format(", {:.1f} µs launching each kernel from the host", us(p.eager));
  if (p.monitor > 0) detail += fmt::format(", {:.1f} µs in the per-step utilization probe", us(p.monitor));
  detail += fmt::format(". {} measured {:.1f} µs per step, start-up excluded.", run.label,
                        us((run.wall_seconds - run.startup()) / static_cast<double>(steps)));
  f.detail = detail;
  f.cost_seconds = overhead * static_cast<double>(steps);
  f.share_of_wall = f.cost_seconds / run.wall_seconds;
  f.evidence = {run.label};
  f.fix = largest->second;
  out.push_back(std::move(f));
}

}  // namespace ddp
