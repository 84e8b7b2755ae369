#pragma once
// Everything a run leaves behind, written by rank zero into its run folder
// (<root>/<name>/version_<n>): hparams.yaml, the loggers' files (metrics.csv, TensorBoard,
// JSONL), checkpoints/, final.safetensors, summary.json and trace.json, and the profiler
// table printed at the end. Other ranks hold an empty RunOutputs that writes nothing.
#include <filesystem>
#include <memory>
#include <vector>

#include "ddpscope/config.h"
#include "ddpscope/mlp.h"
#include "ddpscope/optimizer.h"
#include "dist/communicator.h"
#include "log/logger.h"
#include "observe/trace_writer.h"
#include "train/loop/checkpoint.h"
#include "train/records/gather_stats.h"
#include "train/records/run_summary.h"

namespace ddp {

class RunOutputs {
 public:
  RunOutputs(const TrainerOptions& options, OptionTexts hparams, Communicator& comm);
  ~RunOutputs();

  // Collective: rank zero makes the run folder; every rank learns whether it could, so a
  // refused folder ends every rank with the same usage error instead of leaving them waiting.
  void make_folder();
  // Rank zero: hparams.yaml and the --logger files.
  void start_logging();
  const std::filesystem::path& log_dir() const { return log_dir_; }
  const OptionTexts& hparams() const { return hparams_; }

  void log_metrics(const Metrics& metrics, int64_t epoch, int64_t step);
  // Flushes every logger even when one fails, then reports the first failure.
  void flush();

  // Rank zero: checkpoints/last.safetensors, and with periodic also epoch=<e>-step=<s>.
  void save_checkpoints(const Mlp& network, Optimizer& optimizer, OptimizerKind kind, const TrainingPosition& at,
                        bool periodic);
  std::filesystem::path last_checkpoint() const { return log_dir_ / "checkpoints" / "last.safetensors"; }

  // Rank zero, after the wall clock stopped: final.safetensors, the core's GEMM peak into
  // stats, summary.json, and (unless --profiler none) the profiler table and throughput.
  void finish(const Mlp& network, RunSummary& stats, const std::vector<PhaseCalls>& phase_calls);
  // Rank zero: every rank's spans as trace.json, time 0 at origin_ns.
  void write_trace(const std::vector<RankTrace>& ranks, int64_t origin_ns);

 private:
  const TrainerOptions& options_;
  OptionTexts hparams_;
  Communicator& comm_;
  std::filesystem::path log_dir_;
  std::vector<std::unique_ptr<Logger>> loggers_;
};

}  // namespace ddp
