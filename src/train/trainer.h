#pragma once
// Lightning's Trainer for MLPs: fit() runs the epochs, the training steps with gradient
// accumulation, validation, logging and timing, and writes the run folder (DESIGN §2).
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dist/communicator.h"
#include "log/logger.h"
#include "observe/device_monitor.h"
#include "observe/phase_clock.h"
#include "train/config.h"
#include "train/metric_sink.h"
#include "train/module.h"
#include "train/progress_bar.h"
#include "observe/trace_writer.h"
#include "train/run_summary.h"

namespace ddp {

class Trainer {
 public:
  // The wall clock of the run starts here, as the seed's timer starts before the Trainer.
  // hparams: the resolved options to record in hparams.yaml and summary.json.
  // With --strategy ddp on N devices in a process that mpirun did not start, this
  // re-launches the program under `mpirun -np N` and exits with the job's exit code, as
  // Lightning's DDP launcher re-runs the script; under mpirun it joins the world.
  explicit Trainer(TrainerOptions options, std::vector<std::pair<std::string, std::string>> hparams = {});
  ~Trainer();

  void fit(LightningModule& module, LightningDataModule& data);

  bool is_global_zero() const { return comm_->rank() == 0; }
  int world_size() const { return comm_->size(); }
  const std::filesystem::path& log_dir() const { return log_dir_; }
  int64_t global_step() const { return global_step_; }
  const RunSummary& stats() const { return stats_; }
  // After setup: the checkpoint being resumed is already at --max-epochs or --max-steps.
  bool nothing_left_to_train() const;

 private:
  struct Loop;  // the loaders and optimizer of one fit()
  void setup(LightningModule& module, LightningDataModule& data, Loop& loop);
  // Returns false when max_steps ended training inside the epoch.
  bool train_epoch(LightningModule& module, Loop& loop);
  void validate(LightningModule& module, Loop& loop);
  void start_distributed(LightningModule& module, Loop& loop);
  void open_run_dir();
  Metrics global_mean(const Metrics& local);
  Metrics device_utilization();
  void start_monitor();
  void stop_monitor();
  void gather_utilization();
  void restore(LightningModule& module, Loop& loop);
  void save_checkpoint_files(LightningModule& module, Loop& loop, int64_t epoch, int64_t next_batch, bool periodic);
  void stop_if_signalled(LightningModule& module, Loop& loop, int64_t epoch, int64_t next_batch);
  std::vector<UtilizationPoint> utilization_points() const;
  void log_metrics(const Metrics& metrics, int64_t step);
  void flush_loggers();
  void finish(LightningModule& module, const Loop& loop);
  void start_trace(Loop& loop);
  void write_trace(const Loop& loop);

  TrainerOptions options_;
  std::vector<std::pair<std::string, std::string>> hparams_;
  std::chrono::steady_clock::time_point start_;
  PhaseClock clock_;
  Communicator* comm_ = nullptr;  // the MPI world, or local_comm_
  std::unique_ptr<Communicator> local_comm_;
  std::unique_ptr<SpanBuffer> spans_;  // with --profiler trace
  std::unique_ptr<DeviceMonitor> monitor_;  // --monitor-mode background
  std::unique_ptr<PerStepProbe> probe_;     // --monitor-mode per-step (the seed's habit)
  double probed_utilization_ = -1;
  int64_t clock_offset_ns_ = 0;
  std::filesystem::path log_dir_;
  std::vector<std::unique_ptr<Logger>> loggers_;
  MetricSink train_metrics_;
  MetricSink val_metrics_;
  ProgressBar progress_;
  int64_t epoch_ = 0;
  int64_t resume_batch_ = 0;  // micro-batches of epoch_ a resumed checkpoint had done
  int64_t global_step_ = 0;
  RunSummary stats_;
};

}  // namespace ddp
