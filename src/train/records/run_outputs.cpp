#include "train/records/run_outputs.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <exception>

#include "base/stop_signal.h"
#include "ddpscope/error.h"
#include "dist/root_outcome.h"
#include "log/csv_logger.h"
#include "log/file_io.h"
#include "log/jsonl_logger.h"
#include "log/run_dir.h"
#include "log/tensorboard_logger.h"
#include "observe/gemm_peak.h"
#include "observe/profiler_table.h"
#include "train/config/option_json.h"

namespace ddp {
namespace {

std::string hparams_yaml(const OptionTexts& hparams) {
  if (hparams.empty()) return "{}\n";
  YAML::Emitter out;
  out << YAML::BeginMap;
  for (const auto& [key, value] : hparams) out << YAML::Key << key << YAML::Value << value;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace

RunOutputs::RunOutputs(const TrainerOptions& options, OptionTexts hparams, Communicator& comm)
    : options_(options), hparams_(std::move(hparams)), comm_(comm) {}

RunOutputs::~RunOutputs() = default;

void RunOutputs::make_folder() {
  run_on_root_fail_everywhere(comm_, 0, [&] {
    log_dir_ = make_run_dir(options_.default_root_dir, options_.name, options_.version, options_.overwrite);
  });
}

void RunOutputs::start_logging() {
  if (comm_.rank() != 0) return;
  write_file_atomically(log_dir_ / "hparams.yaml", hparams_yaml(hparams_));
  for (LoggerKind kind : options_.logger) {
    switch (kind) {
      case LoggerKind::kCsv:
        loggers_.push_back(std::make_unique<CsvLogger>(log_dir_ / "metrics.csv"));
        break;
      case LoggerKind::kTensorBoard:
        loggers_.push_back(std::make_unique<TensorBoardLogger>(log_dir_));
        break;
      case LoggerKind::kJsonl:
        loggers_.push_back(std::make_unique<JsonlLogger>(log_dir_));
        break;
    }
  }
}

void RunOutputs::log_metrics(const Metrics& metrics, int64_t epoch, int64_t step) {
  if (metrics.empty()) return;
  for (auto& logger : loggers_) logger->log_metrics(metrics, epoch, step);
}

void RunOutputs::flush() {
  std::exception_ptr first_error;
  for (auto& logger : loggers_) {
    try {
      logger->flush();
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
  }
  if (first_error) std::rethrow_exception(first_error);
}

void RunOutputs::save_checkpoints(const Mlp& network, Optimizer& optimizer, OptimizerKind kind,
                                  const TrainingPosition& at, bool periodic) {
  if (comm_.rank() != 0) return;
  const auto folder = log_dir_ / "checkpoints";
  std::filesystem::create_directories(folder);
  if (periodic) {
    save_checkpoint(folder / fmt::format("epoch={}-step={}.safetensors", at.epoch - 1, at.global_step), network,
                    optimizer, kind, at, hparams_);
  }
  save_checkpoint(last_checkpoint(), network, optimizer, kind, at, hparams_);
  set_last_checkpoint(last_checkpoint().c_str());  // named by an exit on a second signal
}

void RunOutputs::finish(const Mlp& network, RunSummary& stats, const std::vector<PhaseCalls>& phase_calls) {
  if (comm_.rank() != 0) return;
  save_parameters(log_dir_ / "final.safetensors", network, hparams_);
  // After the wall clock stopped: the core's GEMM peak, for the FLOP share of the summary
  // (a GPU run's Trainer measured its GPU's).
  if (stats.gemm_peak_flops_per_second == 0) stats.gemm_peak_flops_per_second = measure_gemm_peak_flops();
  if (!hparams_.empty()) stats.config = typed_config(hparams_, "the Trainer's options");
  write_file_atomically(log_dir_ / "summary.json", to_json(stats).dump(2) + "\n");
  if (options_.profiler == Profiler::kNone) return;
  const int world = stats.world_size;
  std::vector<RankPhases> ranks(world);
  for (int r = 0; r < world; ++r) ranks[r] = {stats.phases_per_rank[r], phase_calls[r], stats.hosts[r]};
  std::fputs(profiler_table(ranks, stats.wall_seconds).c_str(), stdout);
  const double rate = stats.training_flops_per_sample * stats.train_samples / stats.wall_seconds;
  std::printf(
      "Throughput: %.0f samples/s, %.1f optimizer steps/s, %.1f GFLOP/s of model FLOPs (%.0f %% of %d x %.0f "
      "GFLOP/s measured GEMM peak)\n",
      stats.train_samples / stats.wall_seconds, stats.optimizer_steps_run / stats.wall_seconds, rate * 1e-9,
      100.0 * rate / world / stats.gemm_peak_flops_per_second, world, stats.gemm_peak_flops_per_second * 1e-9);
}

void RunOutputs::write_trace(const std::vector<RankTrace>& ranks, int64_t origin_ns) {
  if (comm_.rank() != 0) return;
  write_file_atomically(log_dir_ / "trace.json",
                        [&](const PieceSink& sink) { write_chrome_trace(ranks, origin_ns, sink); });
}

}  // namespace ddp
