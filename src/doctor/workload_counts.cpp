#include "doctor/workload_counts.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/ceil_div.h"
#include "ddpscope/config.h"
#include "ddpscope/error.h"
#include "ddpscope/layer_layout.h"
#include "dist/bucket_plan.h"
#include "train/config/run_config.h"
#include "train/loop/epoch_plan.h"
#include "train/records/run_summary.h"

namespace ddp {
namespace {

void require_positive(int64_t value, const char* name) {
  if (value < 1) throw UsageError(fmt::format("{}: '{}' is not accepted; expected an integer >= 1", name, value));
}

}  // namespace

int64_t validation_samples_for_rank(int64_t dataset_size, int devices, int rank) {
  return dataset_size / devices + (rank < dataset_size % devices ? 1 : 0);
}

WorkloadCounts count_workload(const WorkloadConfig& c) {
  require_positive(c.devices, "--devices");
  require_positive(c.dataset_size, "--dataset-size");
  require_positive(c.batch_size, "--batch-size");
  require_positive(c.input_dim, "--input-dim");
  require_positive(c.hidden_size, "--hidden-size");
  require_positive(c.output_dim, "--output-dim");
  require_positive(c.accumulate_grad_batches, "--accumulate-grad-batches");
  require_positive(c.log_every_n_steps, "--log-every-n-steps");
  require_positive(c.check_val_every_n_epoch, "--check-val-every-n-epoch");
  if (c.hidden_layers < 0)
    throw UsageError(fmt::format("--hidden-layers: '{}' is not accepted; expected an integer >= 0", c.hidden_layers));
  if (c.epochs < 0)
    throw UsageError(fmt::format("--max-epochs: '{}' is not accepted; expected an integer >= 0", c.epochs));
  if (!(c.bucket_cap_mb > 0))
    throw UsageError(fmt::format("--bucket-cap-mb: '{}' is not accepted; expected a number > 0", c.bucket_cap_mb));

  WorkloadCounts n;
  const int64_t world = c.devices;
  n.samples_per_rank = samples_per_rank(c.dataset_size, static_cast<int>(world));
  const EpochPlan plan = plan_epoch(n.samples_per_rank, c.batch_size, c.limit_train_batches, c.accumulate_grad_batches);
  n.micro_batches_per_epoch = plan.micro_batches;
  n.train_samples_per_epoch =
      plan.micro_batches == plan.full_batches ? n.samples_per_rank : plan.micro_batches * c.batch_size;
  n.optimizer_steps_per_epoch = plan.optimizer_steps;
  n.syncs_per_epoch = world == 1                 ? 0
                      : c.sync_every_micro_batch ? n.micro_batches_per_epoch
                                                 : n.optimizer_steps_per_epoch;
  n.optimizer_steps = c.epochs * n.optimizer_steps_per_epoch;
  n.logging_events = n.optimizer_steps / c.log_every_n_steps;
  n.validations = c.epochs / c.check_val_every_n_epoch;
  n.val_samples_rank0 = validation_samples_for_rank(c.dataset_size, c.devices, 0);
  n.val_batches_rank0 = ceil_div(n.val_samples_rank0, c.batch_size);

  const MlpShape shape{c.input_dim, c.hidden_size, c.hidden_layers, c.output_dim};
  // The layout alone, without allocating the model (a width of 8192 would be gigabytes).
  const std::vector<LinearLayout> layers = layer_layout(shape);
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const double gemm = 2.0 * static_cast<double>(layers[l].in) * static_cast<double>(layers[l].out);
    n.forward_flops_per_sample += gemm;
    n.training_flops_per_sample += l == 0 ? 2 * gemm : 3 * gemm;
  }
  n.parameters = static_cast<int64_t>(parameter_count(layers));
  const auto linear = static_cast<int64_t>(layers.size());
  n.kernels_per_micro_batch = 5 * linear;
  n.kernels_per_optimizer_step = 3;
  n.kernels_per_val_batch = 2 * linear + 1;
  n.kernels = c.epochs * (n.micro_batches_per_epoch * n.kernels_per_micro_batch +
                          n.optimizer_steps_per_epoch * n.kernels_per_optimizer_step) +
              n.validations * n.val_batches_rank0 * n.kernels_per_val_batch;
  // The trainer's plan: PyTorch's 1 MiB first bucket, capped by --bucket-cap-mb.
  const auto cap = static_cast<std::size_t>(c.bucket_cap_mb * (1 << 20));
  for (const GradBucket& bucket : plan_buckets(layers, std::max<std::size_t>(cap, 1),
                                               std::min(kDefaultFirstBucketCapBytes, std::max<std::size_t>(cap, 1)))) {
    n.bucket_bytes.push_back(static_cast<int64_t>(bucket.bytes()));
  }
  return n;
}

WorkloadConfig workload_for(const Config& config, int devices) {
  const TrainerOptions& t = config.trainer;
  WorkloadConfig w;
  w.devices = devices;
  w.dataset_size = config.data.dataset_size;
  w.batch_size = config.data.batch_size;
  w.input_dim = config.model.input_dim;
  w.hidden_size = config.model.hidden_size;
  w.hidden_layers = config.model.hidden_layers;
  w.output_dim = config.model.output_dim;
  w.epochs = t.max_epochs;
  w.accumulate_grad_batches = t.accumulate_grad_batches;
  w.log_every_n_steps = t.log_every_n_steps;
  w.check_val_every_n_epoch = t.check_val_every_n_epoch;
  w.limit_train_batches = t.limit_train_batches;
  w.bucket_cap_mb = t.bucket_cap_mb;
  w.sync_every_micro_batch = t.sync_every_micro_batch;
  w.monitor_per_step = t.monitor_mode == MonitorMode::kPerStep;
  w.on_gpu = t.accelerator == Accelerator::kCuda;
  w.cuda_graph = !t.no_cuda_graph;
  return w;
}

bool is_workload_key(std::string_view key) {
  constexpr std::string_view kKeys[] = {"devices",
                                        "dataset_size",
                                        "batch_size",
                                        "input_dim",
                                        "hidden_size",
                                        "hidden_layers",
                                        "output_dim",
                                        "max_epochs",
                                        "accumulate_grad_batches",
                                        "log_every_n_steps",
                                        "check_val_every_n_epoch",
                                        "limit_train_batches",
                                        "bucket_cap_mb",
                                        "sync_every_micro_batch",
                                        "monitor_mode",
                                        "no_cuda_graph"};
  return std::find(std::begin(kKeys), std::end(kKeys), key) != std::end(kKeys);
}

WorkloadConfig workload_from_summary(const RunSummary& summary) {
  if (!summary.config) throw DataError("summary.json has no \"config\": its run's workload is unknown");
  WorkloadConfig w = workload_for(*summary.config, summary.world_size);
  w.epochs = summary.epochs;
  w.on_gpu = summary.accelerator == Accelerator::kCuda;
  return w;
}

}  // namespace ddp
