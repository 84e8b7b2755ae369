#include "ddpscope/trainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>

#include "base/check.h"
#include "base/stop_signal.h"
#include "data/sampler.h"
#include "ddpscope/error.h"
#include "dist/launcher.h"
#include "tensor/gemm.h"
#include "train/loop/trainer_run.h"
#include "train/loop/validation_means.h"

namespace ddp {
namespace {

void check_spec(const DataLoaderSpec& spec, const Mlp& network, const char* which) {
  if (!spec.dataset) throw UsageError(fmt::format("{}_dataloader() returned no dataset", which));
  if (spec.batch_size < 1) {
    throw UsageError(fmt::format("--batch-size: '{}' is not accepted; expected an integer >= 1", spec.batch_size));
  }
  const MlpShape& shape = network.shape();
  if (spec.dataset->input_dim() != shape.input_dim || spec.dataset->output_dim() != shape.output_dim) {
    throw UsageError(
        fmt::format("the {} data has {} inputs and {} targets per sample but the model expects "
                    "--input-dim {} and --output-dim {}",
                    which, spec.dataset->input_dim(), spec.dataset->output_dim(), shape.input_dim, shape.output_dim));
  }
}

// Backward starts from the loss's gradient: a training step must return one.
void check_training_loss(const Loss& loss, const Batch& batch) {
  if (!loss.has_gradient()) {
    throw UsageError(
        "training_step returned a Loss without a gradient; return the Loss that mse_loss() gives, "
        "which backward starts from");
  }
  DDP_CHECK_EQ(loss.rows(), batch.size, "the training loss is of another batch");
}

}  // namespace

GradReducerOptions reducer_options(const TrainerOptions& options) {
  GradReducerOptions out;
  out.bucket_cap_bytes = static_cast<std::size_t>(options.bucket_cap_mb * (1 << 20));
  out.first_bucket_cap_bytes = std::min(out.first_bucket_cap_bytes, out.bucket_cap_bytes);
  out.overlap = !options.no_overlap;
  return out;
}

void Trainer::Run::setup(LightningModule& module, LightningDataModule& data) {
  // With more ranks than cores the launcher says so; a lone process says it here.
  const int cores = available_cores();
  if (comm_.size() == 1 && options_.threads_per_device > cores) {
    std::fprintf(stderr,
                 "ddpscope: --threads-per-device %d needs %d cores but only %d are available: oversubscribing "
                 "(threads share cores; expect each to run slower)\n",
                 options_.threads_per_device, options_.threads_per_device, cores);
  }
  set_gemm_threads(options_.threads_per_device);
  data.setup();
  data_.train_spec = data.train_dataloader();
  data_.val_spec = data.val_dataloader();
  check_spec(data_.train_spec, module.network(), "train");
  check_spec(data_.val_spec, module.network(), "val");
  // Activations sized once for the largest batch: no allocation inside the loop.
  module.reserve_batch(std::max(std::min(data_.train_spec.batch_size, data_.train_spec.dataset->size()),
                                std::min(data_.val_spec.batch_size, data_.val_spec.dataset->size())));

  optim_.config = module.configure_optimizers();
  Mlp& net = module.network();
  optim_.shard = std::make_unique<OptimizerShard>(comm_, net.num_params(), options_.strategy == Strategy::kDdpZero1);
  optim_.optimizer = make_optimizer(optim_.config, optim_.shard->size());
  if (optim_.shard->sharded()) {  // a checkpoint holds the whole state: each rank keeps its range of it
    const std::unique_ptr<Optimizer> whole = make_optimizer(optim_.config, net.num_params());
    position_ = restore_start(options_, outputs_.hparams(), comm_, net, *whole, optim_.config.kind);
    optim_.shard->take_mine(*whole, *optim_.optimizer);
  } else {
    position_ = restore_start(options_, outputs_.hparams(), comm_, net, *optim_.optimizer, optim_.config.kind);
  }
  summary_.optimizer_steps = position_.global_step;
  if (nothing_left()) return;
  // Every rank starts from rank zero's parameters, as DDP's constructor broadcasts them
  // (before a GPU uploads them).
  if (comm_.size() > 1) comm_.broadcast(std::as_writable_bytes(module.network().params()), 0);
  start_gpu(module);
  outputs_.make_folder();
  optim_.reducer = std::make_unique<GradReducer>(comm_, module.network(), reducer_options(options_));
  optim_.layer_hook = optim_.reducer->layer_hook();
  data_.train_loader =
      std::make_unique<Loader>(*data_.train_spec.dataset, data_.train_spec.batch_size, data_.train_spec.num_workers);
  data_.val_loader =
      std::make_unique<Loader>(*data_.val_spec.dataset, data_.val_spec.batch_size, data_.val_spec.num_workers);
  if (options_.profiler == Profiler::kTrace) start_trace();
  if (comm_.size() > 1) start_arrivals();
  utilization_ = std::make_unique<UtilizationWatch>(options_, gpu_.training != nullptr,
                                                    gpu_.training ? gpu_.training->pci_bus_id() : "");
  outputs_.start_logging();
}

EpochPlan Trainer::Run::rank_epoch_plan() const {
  return plan_epoch(samples_per_rank(data_.train_spec.dataset->size(), comm_.size()), data_.train_spec.batch_size,
                    options_.limit_train_batches, options_.accumulate_grad_batches);
}

void Trainer::Run::fit(LightningModule& module, LightningDataModule& data) {
  StopSignals signals;
  setup(module, data);
  if (nothing_left()) {
    if (is_global_zero()) print_nothing_left(options_, position_);
    return;
  }
  recording_.sched_start = take_sched_snapshot();  // nullopt without /proc: the summary's list stays empty
  recording_.host_load_start = take_host_load_snapshot();
  if (recording_.arrivals) start_arrival_clock();
  try {
    for (; options_.max_epochs < 0 || epoch() < options_.max_epochs; ++position_.epoch) {
      const bool completed = train_epoch(module);
      if (completed) {
        summary_.epochs = epoch() + 1;
        if ((epoch() + 1) % options_.check_val_every_n_epoch == 0) validate(module);
        if (options_.checkpoint_every_n_epochs > 0 && (epoch() + 1) % options_.checkpoint_every_n_epochs == 0) {
          clock_.enter(Phase::kLogging);
          save_checkpoints(module, epoch() + 1, 0, /*periodic=*/true);
        }
      }
      clock_.enter(Phase::kLogging);
      outputs_.flush();
      if (!completed) break;
      if (epoch() + 1 < options_.max_epochs || options_.max_epochs < 0) stop_if_signalled(module, epoch() + 1, 0);
      const double previous_end = summary_.last_epoch_end_seconds;
      summary_.last_epoch_end_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      if (summary_.first_epoch_end_seconds == 0) {
        summary_.first_epoch_end_seconds = summary_.last_epoch_end_seconds;
      } else {
        steady_epochs_.add(summary_.last_epoch_end_seconds - previous_end);
      }
    }
  } catch (...) {
    progress_.finish();
    try {
      outputs_.flush();  // keep what was logged before the failure
    } catch (...) {
    }
    throw;
  }
  module.log_to(nullptr, 0);
  finish(module);
}

// One epoch of training steps on this rank's shard (DistributedSampler's), read top to
// bottom: fetch, forward and loss, the loss gradient, backward (communicating only on the
// micro-batch that steps, as Lightning's no_sync), optimizer.
bool Trainer::Run::train_epoch(LightningModule& module) {
  if (gpu_.training) return train_epoch_on_gpu(module);
  RankEpoch e = start_rank_epoch();
  const EpochPlan& plan = e.plan;
  data_.train_loader->start_epoch(epoch(), std::move(e.order), plan.micro_batches - e.skip);

  Mlp& net = module.network();
  Workspace& work = module.workspace();
  const float loss_scale = 1.0f / static_cast<float>(options_.accumulate_grad_batches);  // Lightning divides by k
  Batch batch;
  for (int64_t i = e.skip;; ++i) {
    clock_.enter(Phase::kData);
    if (!data_.train_loader->next(batch)) break;
    const bool step_optimizer = steps_optimizer(i, plan.micro_batches, options_.accumulate_grad_batches);
    if (utilization_->probes_every_step()) {  // the seed's habit: initialise, read, shut down, every step
      clock_.enter(Phase::kMonitor);
      utilization_->probe();
    }

    clock_.enter(Phase::kForward);
    module.log_to(&train_metrics_, batch.size);
    const Loss loss = module.training_step(batch, i);
    check_training_loss(loss, batch);
    if (!std::isfinite(loss.value())) throw_nonfinite_loss(loss.value(), i, global_step());
    summary_.final_train_loss = loss.value();

    clock_.enter(Phase::kBackward);
    loss.write_gradient(work.output_gradient(), loss_scale);
    // ZeRO-1 reduces the gradients at the optimizer step instead, with a reduce-scatter.
    const bool sync = !optim_.shard->sharded() && (step_optimizer || options_.sync_every_micro_batch);
    optim_.reducer->begin_backward(sync);
    net.backward(batch.x, batch.size, work, optim_.layer_hook);
    if (optim_.reducer->syncing()) {
      clock_.enter(Phase::kCommWait);
      optim_.reducer->finish();
    }
    summary_.train_samples += batch.size;

    if (step_optimizer) {
      if (optim_.shard->sharded()) {
        clock_.enter(Phase::kCommWait);
        if (recording_.arrivals) recording_.arrivals->add(steady_now_ns());
        optim_.shard->reduce_scatter_mean(net.grads());
      }
      clock_.enter(Phase::kOptimizer);
      optim_.optimizer->step(optim_.shard->mine(net.params()), optim_.shard->mine(net.grads()));
      if (optim_.shard->sharded()) {
        clock_.enter(Phase::kCommWait);
        optim_.shard->allgather(net.params());
      }
      net.zero_grads();
      if (!after_optimizer_step(module, i + 1, plan.micro_batches)) return false;
    }
    if (progress_.enabled()) {
      clock_.enter(Phase::kLogging);
      progress_.update(epoch(), options_.max_epochs, i + 1, plan.micro_batches, loss.value(),
                       /*force=*/i + 1 == plan.micro_batches);
    }
  }
  return true;
}

Trainer::Run::RankEpoch Trainer::Run::start_rank_epoch() {
  RankEpoch e;
  e.order = epoch_order(data_.train_spec.dataset->size(), data_.train_spec.shuffle, options_.seed, epoch());
  if (comm_.size() > 1) e.order = shard_for_rank(e.order, comm_.size(), comm_.rank());
  e.samples = static_cast<int64_t>(e.order.size());
  e.plan = rank_epoch_plan();
  e.skip = std::min(std::exchange(position_.next_batch, 0), e.plan.micro_batches);
  e.order.erase(e.order.begin(), e.order.begin() + std::min<int64_t>(e.skip * data_.train_spec.batch_size, e.samples));
  return e;
}

bool Trainer::Run::after_optimizer_step(LightningModule& module, int64_t next_batch, int64_t micro_batches) {
  summary_.optimizer_steps = ++position_.global_step;
  ++summary_.optimizer_steps_run;
  const bool log = global_step() % options_.log_every_n_steps == 0;
  const bool last = options_.max_steps > 0 && global_step() >= options_.max_steps;
  if (gpu_.training && (log || last)) read_gpu_losses();
  if (log) log_training_metrics();
  if (last) return false;
  if (next_batch < micro_batches) stop_if_signalled(module, epoch(), next_batch);
  return true;
}

void Trainer::Run::throw_nonfinite_loss(double loss, int64_t batch, int64_t step) const {
  throw_diverged(
      fmt::format("training loss is {} at epoch {}, batch {}, optimizer step {}", loss, epoch(), batch, step));
}

void Trainer::Run::throw_diverged(const std::string& what) const {
  // Adam's normalised steps are the usual cure for SGD's divergence; a run on Adam already has them.
  const char* cure = optim_.config.kind == OptimizerKind::kSgd ? ", or use --optimizer adam" : "";
  throw Error(ExitCode::kOther,
              fmt::format("{}; stopping. Lower --lr or check the data for extreme values{}", what, cure));
}

// The last update can overflow the parameters after a finite loss: no final checkpoint of inf.
void Trainer::Run::check_final_parameters(const Mlp& net) const {
  const std::span<const float> params = net.params();
  const auto bad = std::find_if(params.begin(), params.end(), [](float v) { return !std::isfinite(v); });
  if (bad == params.end()) return;
  throw_diverged(fmt::format("parameter {} of {} is {} after optimizer step {}", bad - params.begin(), params.size(),
                             *bad, global_step()));
}

void Trainer::Run::log_training_metrics() {
  clock_.enter(Phase::kLogging);
  Metrics metrics = global_mean(train_metrics_.latest());
  for (auto& metric : utilization_->gather_latest(comm_)) metrics.push_back(std::move(metric));
  outputs_.log_metrics(metrics, epoch(), global_step() - 1);
}

void Trainer::Run::validate(LightningModule& module) {
  clock_.enter(Phase::kValidation);
  val_metrics_.clear();
  if (gpu_.training) {
    validate_on_gpu();
  } else {
    // Each rank validates every W-th sample without DistributedSampler's padding, so that
    // the reduced sums give the exact mean over the validation set.
    std::vector<int64_t> order = epoch_order(data_.val_spec.dataset->size(), false, options_.seed, epoch());
    if (comm_.size() > 1) {
      std::vector<int64_t> mine;
      for (std::size_t i = comm_.rank(); i < order.size(); i += comm_.size()) mine.push_back(order[i]);
      order = std::move(mine);
    }
    data_.val_loader->start_epoch(epoch(), std::move(order));
    Batch batch;
    while (data_.val_loader->next(batch)) {
      module.log_to(&val_metrics_, batch.size);
      module.validation_step(batch, batch.index);
    }
  }
  const Metrics epoch_means = validation_means(comm_, val_metrics_.entries());
  for (const auto& [name, mean] : epoch_means) {
    if (name == "val_loss") summary_.final_val_loss = mean;
  }
  clock_.enter(Phase::kLogging);
  outputs_.log_metrics(epoch_means, epoch(), std::max<int64_t>(global_step() - 1, 0));
  // An update can diverge after the last finite training loss: the logged row stays, the run fails.
  if (summary_.final_val_loss && !std::isfinite(*summary_.final_val_loss)) {
    outputs_.flush();
    throw_diverged(fmt::format("validation loss is {} after epoch {}, optimizer step {}", *summary_.final_val_loss,
                               epoch(), global_step()));
  }
}

Metrics Trainer::Run::global_mean(const Metrics& local) {
  if (comm_.size() == 1) return local;
  std::vector<double> values;
  for (const auto& [name, value] : local) values.push_back(value / comm_.size());
  comm_.allreduce_sum(std::span<double>(values));
  Metrics out = local;
  for (std::size_t i = 0; i < out.size(); ++i) out[i].second = values[i];
  return out;
}

Trainer::Trainer(TrainerOptions options, World world, OptionTexts hparams)
    : run_(std::make_unique<Run>(std::move(options), std::move(world), std::move(hparams))) {}

Trainer::~Trainer() = default;

void Trainer::fit(LightningModule& module, LightningDataModule& data) { run_->fit(module, data); }
bool Trainer::is_global_zero() const { return run_->is_global_zero(); }
int Trainer::world_size() const { return run_->world_size(); }
const std::filesystem::path& Trainer::log_dir() const { return run_->log_dir(); }
int64_t Trainer::global_step() const { return run_->global_step(); }
TrainingStats Trainer::stats() const {
  const RunSummary& s = run_->summary();
  return {.world_size = s.world_size,
          .strategy = s.strategy,
          .accelerator = s.accelerator,
          .epochs = s.epochs,
          .optimizer_steps = s.optimizer_steps,
          .train_samples = s.train_samples,
          .wall_seconds = s.wall_seconds,
          .samples_per_second = s.samples_per_second(),
          .final_train_loss = s.final_train_loss,
          .final_val_loss = s.final_val_loss,
          .gradient_allreduces = s.allreduce.calls,
          .gradient_bytes = s.allreduce.bytes};
}

const RunSummary& run_summary(const Trainer& trainer) { return trainer.run_->summary(); }
bool Trainer::nothing_left_to_train() const { return run_->nothing_left(); }

}  // namespace ddp
