#pragma once
// The Trainer's run (one fit()): its state and steps, shared by the CPU loop (trainer.cpp),
// the GPU's (trainer_gpu.cpp) and what both record and end with (trainer_records.cpp).
// Private to src/train. Checkpoints and the stop on a signal: trainer_checkpoints.cpp.
#include <chrono>
#include <functional>
#include <memory>
#include <optional>

#include "data/loader.h"
#include "ddpscope/trainer.h"
#include "dist/gpu_placement.h"
#include "dist/grad_reducer.h"
#include "dist/launcher.h"
#include "dist/optimizer_shard.h"
#include "gpu/gpu_training.h"
#include "observe/device_step_phases.h"
#include "observe/host_load.h"
#include "observe/phase_clock.h"
#include "observe/sched_stats.h"
#include "train/loop/epoch_plan.h"
#include "train/loop/metric_sink.h"
#include "train/loop/progress_bar.h"
#include "train/loop/resume.h"
#include "train/loop/utilization_watch.h"
#include "train/records/epoch_spread.h"
#include "train/records/gather_arrivals.h"
#include "train/records/run_outputs.h"
#include "train/records/run_summary.h"

namespace ddp {

// --bucket-cap-mb and --no-overlap, as the CPU's reducer and the GPU's NCCL buckets take them.
GradReducerOptions reducer_options(const TrainerOptions& options);

class Trainer::Run {
 public:
  Run(TrainerOptions options, World world, OptionTexts hparams)
      : options_(std::move(options)),
        world_(std::move(world)),
        comm_(world_.comm()),
        start_(job_start_time()),  // a rank launched by ddpscope counts from the launch
        outputs_(options_, std::move(hparams), comm_),
        progress_(comm_.rank() == 0 ? options_.progress_bar : ProgressMode::kOff) {
    clock_.start(Phase::kStartup, start_);
  }

  void fit(LightningModule& module, LightningDataModule& data);
  bool is_global_zero() const { return comm_.rank() == 0; }
  int world_size() const { return comm_.size(); }
  const std::filesystem::path& log_dir() const { return outputs_.log_dir(); }
  int64_t global_step() const { return position_.global_step; }
  const RunSummary& summary() const { return summary_; }
  bool nothing_left() const { return ddp::nothing_left_to_train(options_, position_); }

 private:
  void setup(LightningModule& module, LightningDataModule& data);
  // Returns false when max_steps ended training inside the epoch.
  bool train_epoch(LightningModule& module);
  void validate(LightningModule& module);
  // This rank's epoch, for either loop: its samples in order (DistributedSampler's shard), its
  // plan, and the micro-batches a resumed epoch's checkpoint had trained, taken off the front.
  struct RankEpoch {
    std::vector<int64_t> order;
    int64_t samples = 0;  // before the skip
    EpochPlan plan;
    int64_t skip = 0;
  };
  RankEpoch start_rank_epoch();
  // After an optimizer step, for either loop: counts it, logs the training metrics where due (a
  // GPU's losses read first) and takes a signal's stop before next_batch; false at --max-steps.
  bool after_optimizer_step(LightningModule& module, int64_t next_batch, int64_t micro_batches);
  [[noreturn]] void throw_nonfinite_loss(double loss, int64_t batch, int64_t step) const;
  [[noreturn]] void throw_diverged(const std::string& what) const;
  void check_final_parameters(const Mlp& net) const;
  // The same on a GPU (trainer_gpu.cpp); validate_on_gpu fills val_metrics_ as validation_step's
  // logging does on CPU.
  void start_gpu(LightningModule& module);
  GradTransport choose_gpu_transport(const GpuPlacement& placement);
  bool train_epoch_on_gpu(LightningModule& module);
  void read_gpu_losses();
  void validate_on_gpu();
  void copy_gpu_to_host(LightningModule& module);
  void log_training_metrics();
  void stop_if_signalled(LightningModule& module, int64_t epoch, int64_t next_batch);
  void save_checkpoints(LightningModule& module, int64_t epoch, int64_t next_batch, bool periodic);
  EpochPlan rank_epoch_plan() const;
  void start_trace();
  void start_arrivals();
  void start_arrival_clock();
  int64_t arrivals_per_sync() const;
  void finish(LightningModule& module);
  void write_trace();
  Metrics global_mean(const Metrics& local);
  int64_t epoch() const { return position_.epoch; }

  TrainerOptions options_;
  World world_;
  Communicator& comm_;
  std::chrono::steady_clock::time_point start_;
  PhaseClock clock_;
  RunOutputs outputs_;
  ProgressBar progress_;
  MetricSink train_metrics_;
  MetricSink val_metrics_;
  LoopPosition position_;  // advanced as training goes: the epoch, and the optimizer steps taken
  RunSummary summary_;
  // Each rank's own, and rank zero's is the one its summary.json keeps: the steps' allreduces
  // and the stop agreement at each epoch's end tie every rank's epoch ends to the slowest
  // rank's (within one collective's exit skew), so rank zero's epochs are the slowest rank's
  // without gathering anything, on the clock its wall_seconds is read from.
  EpochSpreadAccumulator steady_epochs_;
  // Of one fit(): the data's loaders, and what steps the parameters.
  struct Loading {
    DataLoaderSpec train_spec;
    DataLoaderSpec val_spec;
    std::unique_ptr<Loader> train_loader;
    std::unique_ptr<Loader> val_loader;
  } data_;
  struct Optimization {
    OptimizerConfig config;
    std::unique_ptr<OptimizerShard> shard;  // the whole parameters, but with --strategy ddp_zero1
    std::unique_ptr<Optimizer> optimizer;   // of the shard's range
    std::unique_ptr<GradReducer> reducer;   // a no-op on one rank
    std::function<void(int64_t)> layer_hook;
  } optim_;
  std::unique_ptr<UtilizationWatch> utilization_;
  // What the run records as it trains, for its summary and trace (trainer_records.cpp).
  struct Recording {
    std::unique_ptr<SpanBuffer> spans;                // with --profiler trace
    int64_t clock_offset_ns = 0;                      // rank r's clock + offset = rank zero's
    std::optional<SchedSnapshot> sched_start;         // this thread's, as training starts
    std::optional<HostLoadSnapshot> host_load_start;  // the host's cores and this process, as training starts
    std::unique_ptr<ArrivalBuffer> arrivals;          // with more than one rank
  } recording_;
  // On a GPU (trainer_gpu.cpp); training is null on CPU.
  struct OnGpu {
    // The device's copy of the parameters and the optimizer's state (the host's are brought
    // up to date by copy_gpu_to_host).
    std::unique_ptr<GpuTraining> training;
    struct Epoch {
      int64_t samples = 0;        // this rank's shard of the epoch
      int64_t first_batch = 0;    // of the epoch's micro-batches: the first this run trains
      int64_t micro_batches = 0;  // the epoch's, from its first (EpochPlan's)
      int64_t steps_before = 0;   // optimizer steps taken before first_batch
      int64_t checked = 0;        // micro-batches from first_batch whose loss the host has read
    } epoch;
    DevicePhaseSamples phases;                       // the GPU's steps, and the CUDA events of timed ones
    bool time_next_step = true;                      // the step after each read of the device is timed
    GradTransport transport = GradTransport::kNone;  // the GPU ranks' (dist/grad_transport_choice.h)
  } gpu_;
};

}  // namespace ddp
