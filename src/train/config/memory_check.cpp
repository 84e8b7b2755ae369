#include "train/config/memory_check.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "data/teacher_dataset.h"
#include "ddpscope/error.h"
#include "train/config/run_config.h"
#include "train/records/trace_size.h"

namespace ddp {
namespace {

constexpr double kFloat = sizeof(float);
constexpr double kIndex = sizeof(int64_t);

// Counts in double: option values up to 2^63 multiply without overflow.
double params_of(const MlpShape& shape) {
  double count = 0;
  const std::vector<int64_t> widths = shape.widths();
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    count += static_cast<double>(widths[l]) * static_cast<double>(widths[l + 1]) + static_cast<double>(widths[l + 1]);
  }
  return count;
}

double optimizer_states(const OptimizerConfig& optimizer) {
  if (optimizer.kind == OptimizerKind::kSgd) return optimizer.momentum != 0 ? 1 : 0;
  return 2;  // Adam, AdamW: exp_avg and exp_avg_sq
}

std::string bytes_text(double bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  std::size_t unit = 0;
  while (bytes >= 1024 && unit + 1 < std::size(kUnits)) {
    bytes /= 1024;
    ++unit;
  }
  return fmt::format("{:.{}f} {}", bytes, unit == 0 ? 0 : 1, kUnits[unit]);
}

}  // namespace

MemoryNeed memory_need(const Config& c) {
  const MlpShape& shape = c.model;
  const double inputs = static_cast<double>(shape.input_dim), outputs = static_cast<double>(shape.output_dim);
  MemoryNeed need;
  const double params = params_of(shape);
  need.model = (2 + optimizer_states(c.optimizer)) * params * kFloat;

  // Samples: a CSV file holds at most one row per 2 * (I + O) bytes (a digit and a
  // separator per value), and is read whole.
  double samples = static_cast<double>(c.data.dataset_size);
  if (c.data.data.starts_with("csv:")) {
    std::error_code error;
    const auto file_bytes = std::filesystem::file_size(c.data.data.substr(4), error);
    const double text = error ? 0 : static_cast<double>(file_bytes);
    samples = text / (2 * (inputs + outputs));
    need.data += text;
  }
  if (c.data.data == "teacher") need.data += TeacherDataset::setup_floats(shape.input_dim, shape.output_dim) * kFloat;
  need.data += 2 * samples * kIndex;  // an epoch's order and this rank's shard of it

  // The Trainer's network and each loader's batches are sized for the largest batch.
  const double rows = std::min(static_cast<double>(c.data.batch_size), samples);
  const std::vector<int64_t> widths = shape.widths();
  double activations = 0, widest = 0;
  for (std::size_t l = 0; l < widths.size(); ++l) {
    if (l > 0) activations += static_cast<double>(widths[l]);
    widest = std::max(widest, static_cast<double>(widths[l]));
  }
  const double slots = 2.0 * (c.data.loader_workers == 0 ? 1 : 2 * c.data.loader_workers);  // train + val loaders
  need.batches = rows * (activations + 2 * widest) * kFloat + slots * rows * ((inputs + outputs) * kFloat + kIndex);

  if (c.trainer.profiler == Profiler::kTrace) {
    // The most samples a rank gets: an automatic world counts as one rank.
    const int world = std::max(c.trainer.devices, 1);
    const auto known_samples = static_cast<int64_t>(std::min(samples, 0x1p62));
    const EpochPlan plan = plan_epoch(samples_per_rank(known_samples, world), c.data.batch_size,
                                      c.trainer.limit_train_batches, c.trainer.accumulate_grad_batches);
    const auto buckets = static_cast<int64_t>(widths.size()) - 1;  // at most one per layer
    need.trace = trace_size(plan, epochs_to_run(c.trainer.max_epochs, c.trainer.max_steps, plan), buckets).bytes();
  }
  return need;
}

double memory_limit(std::string* what_limits) {
  double limit = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGE_SIZE));
  *what_limits = "physical memory";
  std::ifstream cgroup("/sys/fs/cgroup/memory.max");  // "max" when unlimited
  double cgroup_limit = 0;
  if (cgroup >> cgroup_limit && cgroup_limit > 0 && cgroup_limit < limit) {
    limit = cgroup_limit;
    *what_limits = "memory limit (cgroup memory.max)";
  }
  return limit;
}

void check_memory(const Config& c) {
  const MemoryNeed need = memory_need(c);
  const TrainerOptions& t = c.trainer;
  // The ranks that share this machine: --devices over --num-nodes (auto counts as 1).
  const int64_t ranks = t.devices > 0 ? (t.devices + t.num_nodes - 1) / t.num_nodes : 1;
  const double total = need.total() * static_cast<double>(ranks);
  std::string what_limits;
  const double limit = memory_limit(&what_limits);
  if (total <= limit) return;
  const std::string per_rank =
      ranks > 1 ? fmt::format(" for its {} devices on this machine ({} each)", ranks, bytes_text(need.total())) : "";
  // The advice names the options of the largest part.
  const double largest = std::max({need.model, need.batches, need.data, need.trace});
  const char* lower = largest == need.model     ? "--hidden-size, --hidden-layers, --input-dim or --output-dim"
                      : largest == need.batches ? "--batch-size or the model's widths"
                      : largest == need.data    ? "--dataset-size (or use a smaller CSV file)"
                                                : "--max-steps or --max-epochs, or use --profiler simple";
  const std::string trace = need.trace > 0 ? fmt::format("; --profiler trace's spans {}", bytes_text(need.trace)) : "";
  throw UsageError(fmt::format(
      "this configuration needs {} of memory{} (parameters, gradients and optimizer state {}; activations and "
      "batches {}; data and sample order {}{}), more than this machine's {} of {}; lower {}",
      bytes_text(total), per_rank, bytes_text(need.model), bytes_text(need.batches), bytes_text(need.data), trace,
      bytes_text(limit), what_limits, lower));
}

}  // namespace ddp
