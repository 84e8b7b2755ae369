// The Trainer's loop on GPUs: the epochs, steps, logging,
// checkpoints and stops of trainer.cpp's CPU loop, with each optimizer step one
// GpuTraining::step (a CUDA graph's launch, enqueued only) and the losses read from the
// device only where the host needs them: at logging steps, before a checkpoint and at each
// epoch's end. The host's time in the steps (launching them, and waiting for the device
// where it reads) is the phase "other"; the step after each read is timed by CUDA events,
// and at the run's end the device's share of "other" becomes data, forward, backward and
// optimizer (observe/device_step_phases.h). With more than one rank, each takes its shard
// as on CPU and the ranks average each step's gradients: over NCCL inside the step's graph,
// or, through host memory, in the phase comm_wait (those steps are not timed).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <typeinfo>
#include <utility>

#include "base/check.h"
#include "data/sampler.h"
#include "ddpscope/error.h"
#include "dist/comm_watchdog.h"
#include "dist/gpu_placement.h"
#include "dist/grad_transport_choice.h"
#include "gpu/visible_gpus.h"
#include "train/config/accelerator_check.h"
#include "train/loop/regression_task.h"
#include "train/loop/trainer_run.h"

namespace ddp {

// Decides where the run trains (accelerator_check.h) and, on a GPU, uploads the parameters
// and the optimizer's state, restored or fresh. The GPU makes the dataset's samples itself
// (gpu/gpu_data_spec.h), for training and validation (the same dataset, as the seed's data
// module has it).
void Trainer::Run::start_gpu(LightningModule& module) {
  const std::optional<GpuDataSpec> data = gpu_data_spec(*data_.train_spec.dataset);
  const bool regression_on_gpu_data = typeid(module) == typeid(RegressionModel) && data.has_value() &&
                                      data_.val_spec.dataset == data_.train_spec.dataset &&
                                      data_.val_spec.batch_size == data_.train_spec.batch_size;
  TrainerOptions this_world = options_;  // its devices are the ranks it has
  this_world.devices = comm_.size();
  this_world.num_nodes = 1;
  bool on_gpu = trains_on_gpu(this_world, regression_on_gpu_data);
  if (comm_.size() > 1 && options_.accelerator == Accelerator::kAuto) {
    // Hosts may see different GPU counts: the world trains on GPUs only where every rank can.
    const std::vector<uint64_t> votes = comm_.allgather(uint64_t{on_gpu});
    on_gpu = std::find(votes.begin(), votes.end(), uint64_t{0}) == votes.end();
  }
  if (!on_gpu) return;
  GpuPlacement placement;
  if (comm_.size() > 1) placement = place_on_gpus(comm_, static_cast<int>(visible_gpus().devices.size()));
  const GradTransport transport = gpu_.transport = choose_gpu_transport(placement);
  GpuStepSpec spec{.shape = module.network().shape(),
                   .optimizer = optim_.config,
                   .precision = options_.precision,
                   .batch_size = data_.train_spec.batch_size,
                   .accumulate = options_.accumulate_grad_batches,
                   .data = *data,
                   .max_epoch_steps = rank_epoch_plan().optimizer_steps,
                   .cuda_graph = !options_.no_cuda_graph,
                   .device = placement.gpu,
                   .world = comm_.size(),
                   .rank = comm_.rank()};
  if (transport == GradTransport::kNccl) {
    // llm.c's start: rank 0's id, carried to the others over MPI.
    NcclId id{};
    if (comm_.rank() == 0) id = new_nccl_id();
    comm_.broadcast(id, 0);
    spec.nccl_id = id;
    const GradReducerOptions buckets = reducer_options(options_);  // --no-overlap: one for everything
    const std::size_t no_cap = std::numeric_limits<std::size_t>::max();
    spec.buckets = plan_buckets(module.network().layers(), buckets.overlap ? buckets.bucket_cap_bytes : no_cap,
                                buckets.overlap ? buckets.first_bucket_cap_bytes : no_cap);
    spec.nccl_timeout_s = comm_timeout_from_env();
    if (optim_.shard->sharded()) spec.shard_counts = optim_.shard->counts();
  } else if (transport == GradTransport::kHostMpi) {
    // The ranks' collectives, as the CPU loop calls them; their waits are comm_wait.
    const auto waiting = [this](auto collective) {
      return [this, collective](std::span<float> values) {
        clock_.enter(Phase::kCommWait);
        collective(values);
        clock_.enter(Phase::kOther);
      };
    };
    if (optim_.shard->sharded()) {
      spec.reduce_gradients = waiting([this](std::span<float> grads) { optim_.shard->reduce_scatter_mean(grads); });
      spec.gather_params = waiting([this](std::span<float> params) { optim_.shard->allgather(params); });
    } else {
      spec.reduce_gradients = waiting([this](std::span<float> grads) { comm_.allreduce_mean(grads); });
    }
  }
  if (optim_.shard->sharded()) {  // ZeRO-1: this rank's optimizer is its range's
    spec.update_begin = static_cast<int64_t>(optim_.shard->begin());
    spec.update_count = static_cast<int64_t>(optim_.shard->size());
  }
  gpu_.training = std::make_unique<GpuTraining>(spec, module.network().params(), *optim_.optimizer);
}

// One transport for the whole world (dist/grad_transport_choice.h), from every rank's NCCL:
// the lowest rank that cannot load it says why, to all. NCCL (over 200 MB) is loaded only
// where it may be used: not for mpi, one rank on its own, or ranks sharing a GPU.
GradTransport Trainer::Run::choose_gpu_transport(const GpuPlacement& placement) {
  const bool may_use_nccl = options_.process_group_backend != ProcessGroupBackend::kMpi &&
                            (comm_.size() > 1 || options_.process_group_backend == ProcessGroupBackend::kNccl) &&
                            placement.max_ranks_per_gpu == 1;
  NcclReadiness nccl;
  if (may_use_nccl) {
    const std::string why = nccl_unavailable();
    const std::vector<uint64_t> ready = comm_.allgather(uint64_t{why.empty()});
    const auto first_without = std::find(ready.begin(), ready.end(), uint64_t{0});
    if (first_without != ready.end()) {
      nccl.first_rank_without = static_cast<int>(first_without - ready.begin());
      std::array<std::byte, 512> text{};  // the reason, cut to a fixed size for the broadcast
      if (comm_.rank() == nccl.first_rank_without)
        std::memcpy(text.data(), why.data(), std::min(why.size(), text.size() - 1));
      comm_.broadcast(text, nccl.first_rank_without);
      nccl.why = reinterpret_cast<const char*>(text.data());
    }
  }
  const GradTransportChoice choice =
      choose_grad_transport(options_.process_group_backend, placement, comm_.size(), nccl);
  if (comm_.rank() == 0 && !choice.line.empty()) std::fprintf(stderr, "%s\n", choice.line.c_str());
  return choice.transport;
}

bool Trainer::Run::train_epoch_on_gpu(LightningModule& module) {
  const RankEpoch e = start_rank_epoch();
  const EpochPlan& plan = e.plan;
  const int64_t skip = e.skip;
  const std::vector<std::vector<int64_t>> steps =
      step_micro_batch_sizes(e.samples, data_.train_spec.batch_size, plan, options_.accumulate_grad_batches);
  // A resumed epoch skips the steps its checkpoint had done (checkpoints are at step ends).
  std::size_t step = 0;
  for (int64_t done = 0; done < skip; ++step) {
    done += static_cast<int64_t>(steps[step].size());
    DDP_CHECK_LE(done, skip, "a checkpoint inside an optimizer step");
  }
  gpu_.epoch = {.samples = e.samples,
                .first_batch = skip,
                .micro_batches = plan.micro_batches,
                .steps_before = global_step(),
                .checked = 0};
  gpu_.training->start_epoch(epoch(), e.order, global_step(), static_cast<int64_t>(steps.size() - step));

  int64_t next_batch = skip;
  for (; step < steps.size(); ++step) {
    const std::vector<int64_t>& sizes = steps[step];
    if (utilization_->probes_every_step()) {  // the seed's habit, once per micro-batch as on CPU
      clock_.enter(Phase::kMonitor);
      for (std::size_t j = 0; j < sizes.size(); ++j) utilization_->probe();
    }
    clock_.enter(Phase::kOther);
    gpu_.training->step(sizes, std::exchange(gpu_.time_next_step, false));
    gpu_.phases.add_trained(static_cast<int64_t>(sizes.size()));
    next_batch += static_cast<int64_t>(sizes.size());
    for (const int64_t size : sizes) summary_.train_samples += size;
    if (!after_optimizer_step(module, next_batch, plan.micro_batches)) return false;
  }
  read_gpu_losses();
  return true;
}

// The micro-batches' losses since the last read, each checked as the CPU's loop checks its
// own (same message) and logged as the CPU's training_step logs it: the latest is train_loss.
void Trainer::Run::read_gpu_losses() {
  if (gpu_.transport == GradTransport::kNccl && comm_.size() > 1) {
    // The ranks meet on the host before it waits for the device: a rank that stopped would
    // hang the others' allreduces, and here the watchdog names it (dist/comm_watchdog.h).
    clock_.enter(Phase::kCommWait);
    comm_.barrier();
    clock_.enter(Phase::kOther);
  }
  const std::vector<double> sums = gpu_.training->epoch_sum_squares();
  if (const std::optional<DeviceStepMarks> marks = gpu_.training->take_timed_step()) {
    gpu_.phases.add_timed(device_step_times(*marks));
    if (recording_.spans) {
      for (const Span& span : device_step_spans(*marks)) recording_.spans->add(span);
    }
  }
  gpu_.time_next_step = true;
  const int64_t samples = gpu_.epoch.samples, batch_size = data_.train_spec.batch_size;
  const int64_t outputs = data_.train_spec.dataset->output_dim();
  double loss = 0;
  for (int64_t j = gpu_.epoch.checked; j < static_cast<int64_t>(sums.size()); ++j) {
    const int64_t batch = gpu_.epoch.first_batch + j;
    const int64_t rows = std::min(batch_size, samples - batch * batch_size);
    loss = sums[static_cast<std::size_t>(j)] / static_cast<double>(rows * outputs);
    if (!std::isfinite(loss)) {
      throw_nonfinite_loss(loss, batch, gpu_.epoch.steps_before + j / options_.accumulate_grad_batches);
    }
    train_metrics_.record("train_loss", loss, rows);
    summary_.final_train_loss = loss;
  }
  if (gpu_.epoch.checked == static_cast<int64_t>(sums.size())) return;
  gpu_.epoch.checked = static_cast<int64_t>(sums.size());
  if (progress_.enabled()) {
    clock_.enter(Phase::kLogging);
    const int64_t done = gpu_.epoch.first_batch + gpu_.epoch.checked;
    progress_.update(epoch(), options_.max_epochs, done, gpu_.epoch.micro_batches, loss,
                     /*force=*/done == gpu_.epoch.micro_batches);
  }
}

// What validation_step logs over the whole set, as sums weighted by batch size: a batch's
// val_loss (its squared errors over rows x outputs) times its rows adds its squared errors
// over outputs.
void Trainer::Run::validate_on_gpu() {
  const double sum_squares = gpu_.training->validation_sum_squares(epoch());
  val_metrics_.add_sums("val_loss", sum_squares / static_cast<double>(data_.val_spec.dataset->output_dim()),
                        static_cast<double>(gpu_.training->validation_samples()));
}

// Before the host writes its parameters (a checkpoint, final.safetensors): the losses not yet
// read are checked first, so that a diverged run stops with its message, not a checkpoint.
void Trainer::Run::copy_gpu_to_host(LightningModule& module) {
  read_gpu_losses();
  gpu_.training->copy_to_host(module.network().params(), *optim_.optimizer);
  optim_.optimizer->set_steps(global_step());
}

}  // namespace ddp
