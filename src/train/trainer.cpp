#include "train/trainer.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <functional>

#include "base/error.h"
#include "data/sampler.h"
#include "dist/gather.h"
#include "dist/grad_reducer.h"
#include "dist/launcher.h"
#include "dist/mpi_communicator.h"
#include "dist/world.h"
#include "log/csv_logger.h"
#include "log/jsonl_logger.h"
#include "log/tensorboard_logger.h"
#include "observe/gemm_peak.h"
#include "observe/profiler_table.h"
#include "observe/trace_writer.h"
#include "log/file_io.h"
#include "log/run_dir.h"
#include "tensor/gemm.h"
#include "train/checkpoint.h"
#include "base/stop_signal.h"
#include "train/validation_means.h"

namespace ddp {

struct Trainer::Loop {
  DataLoaderSpec train_spec;
  DataLoaderSpec val_spec;
  std::unique_ptr<Loader> train_loader;
  std::unique_ptr<Loader> val_loader;
  std::unique_ptr<Optimizer> optimizer;
  OptimizerKind optimizer_kind = OptimizerKind::kAdam;
  std::unique_ptr<GradReducer> reducer;  // only with more than one rank
  std::function<void(int64_t)> layer_hook;
};

namespace {

void check_spec(const DataLoaderSpec& spec, const Mlp& network, const char* which) {
  if (!spec.dataset) throw UsageError(fmt::format("{}_dataloader() returned no dataset", which));
  if (spec.batch_size < 1) {
    throw UsageError(fmt::format("--batch-size: '{}' is not accepted; expected an integer >= 1", spec.batch_size));
  }
  const MlpShape& shape = network.shape();
  if (spec.dataset->input_dim() != shape.input_dim || spec.dataset->output_dim() != shape.output_dim) {
    throw UsageError(fmt::format("the {} data has {} inputs and {} targets per sample but the model expects "
                                 "--input-dim {} and --output-dim {}",
                                 which, spec.dataset->input_dim(), spec.dataset->output_dim(), shape.input_dim,
                                 shape.output_dim));
  }
}

// The command line of this process, to re-launch it under mpirun.
std::vector<std::string> own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  for (std::string arg; std::getline(in, arg, '\0');) args.push_back(arg);
  return args;
}

// FNV-1a over the resolved options: ranks started with different options must not train.
uint64_t config_hash(const std::vector<std::pair<std::string, std::string>>& hparams, const TrainerOptions& t) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](std::string_view text) {
    for (unsigned char ch : text) h = (h ^ ch) * 0x100000001b3ull;
    h = (h ^ 0xff) * 0x100000001b3ull;
  };
  for (const auto& [key, value] : hparams) {
    mix(key);
    mix(value);
  }
  for (const auto& field : {std::to_string(t.max_epochs), std::to_string(t.max_steps),
                            std::to_string(t.accumulate_grad_batches), std::to_string(t.seed), t.strategy}) {
    mix(field);
  }
  return h;
}

std::string hparams_yaml(const std::vector<std::pair<std::string, std::string>>& hparams) {
  if (hparams.empty()) return "{}\n";
  YAML::Emitter out;
  out << YAML::BeginMap;
  for (const auto& [key, value] : hparams) out << YAML::Key << key << YAML::Value << value;
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

}  // namespace

Trainer::Trainer(TrainerOptions options, std::vector<std::pair<std::string, std::string>> hparams)
    : options_(std::move(options)),
      hparams_(std::move(hparams)),
      start_(job_start_time()),  // a rank launched by ddpscope counts from the launch
      progress_(options_.progress_bar) {
  clock_.start(Phase::kStartup, start_);
  if (options_.devices > 1 && !launched_by_mpi()) {
    std::vector<std::string> args = own_command_line();
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    std::exit(relaunch_under_mpirun(static_cast<int>(args.size()), argv.data(),
                                   {options_.devices, options_.threads_per_device}));
  }
  // Under mpirun every rank joins the world, except with --strategy single (one process
  // training alone, e.g. a reference run inside a multi-rank test).
  if (launched_by_mpi() && options_.strategy != "single") {
    comm_ = &mpi_world();
    check_world(*comm_, options_.devices, options_.num_nodes);
    check_same_config(*comm_, config_hash(hparams_, options_));
  } else {
    local_comm_ = make_local_communicator();
    comm_ = local_comm_.get();
  }
  if (!is_global_zero()) progress_ = ProgressBar("off");
}

Trainer::~Trainer() = default;

void Trainer::setup(LightningModule& module, LightningDataModule& data, Loop& loop) {
  // With more ranks than cores the launcher says so; a lone process says it here.
  const int cores = available_cores();
  if (comm_->size() == 1 && options_.threads_per_device > cores) {
    std::fprintf(stderr,
                 "ddpscope: --threads-per-device %d needs %d cores but only %d are available: oversubscribing "
                 "(threads share cores; expect each to run slower)\n",
                 options_.threads_per_device, options_.threads_per_device, cores);
  }
  set_gemm_threads(options_.threads_per_device);
  data.setup();
  loop.train_spec = data.train_dataloader();
  loop.val_spec = data.val_dataloader();
  check_spec(loop.train_spec, module.network(), "train");
  check_spec(loop.val_spec, module.network(), "val");

  // Activations sized once for the largest batch: no allocation inside the loop.
  const int64_t max_batch = std::max(std::min(loop.train_spec.batch_size, loop.train_spec.dataset->size()),
                                     std::min(loop.val_spec.batch_size, loop.val_spec.dataset->size()));
  auto network = std::make_unique<Mlp>(module.network().shape(), max_batch);
  std::copy(module.network().params().begin(), module.network().params().end(), network->params().begin());
  module.network_ = std::move(network);

  const OptimizerConfig optimizer_config = module.configure_optimizers();
  loop.optimizer_kind = optimizer_config.kind;
  loop.optimizer = make_optimizer(optimizer_config, module.network().num_params());
  restore(module, loop);
  if (nothing_left_to_train()) return;
  open_run_dir();
  if (comm_->size() > 1) start_distributed(module, loop);
  loop.train_loader = std::make_unique<Loader>(*loop.train_spec.dataset, loop.train_spec.batch_size,
                                               loop.train_spec.num_workers);
  loop.val_loader =
      std::make_unique<Loader>(*loop.val_spec.dataset, loop.val_spec.batch_size, loop.val_spec.num_workers);
  if (options_.profiler == "trace") start_trace(loop);
  start_monitor();

  if (!is_global_zero()) return;  // only rank zero writes files
  write_file_atomically(log_dir_ / "hparams.yaml", hparams_yaml(hparams_));
  for (size_t start = 0; start <= options_.logger.size();) {
    const size_t comma = std::min(options_.logger.find(',', start), options_.logger.size());
    const std::string name = options_.logger.substr(start, comma - start);
    if (name == "csv") loggers_.push_back(std::make_unique<CsvLogger>(log_dir_ / "metrics.csv"));
    if (name == "tensorboard") loggers_.push_back(std::make_unique<TensorBoardLogger>(log_dir_));
    if (name == "jsonl") loggers_.push_back(std::make_unique<JsonlLogger>(log_dir_));
    start = comma + 1;
  }
}

// Rank zero makes the run folder; every rank learns whether it could, so that a refused
// folder ends every rank with the same usage error instead of leaving them waiting.
void Trainer::open_run_dir() {
  std::string error;
  if (is_global_zero()) {
    try {
      log_dir_ = make_run_dir(options_.default_root_dir, options_.name, options_.version, options_.overwrite);
    } catch (const UsageError& e) {
      error = e.what();
    }
  }
  if (comm_->size() > 1) {
    std::vector<double> failed = {error.empty() ? 0.0 : 1.0};
    comm_->allreduce_sum(std::span<double>(failed));
    if (failed[0] > 0 && error.empty()) error = "rank zero could not make the run folder";  // printed by rank zero
  }
  if (!error.empty()) throw UsageError(error);
}

void Trainer::start_distributed(LightningModule& module, Loop& loop) {
  // Every rank starts from rank zero's parameters, as DDP's constructor broadcasts them.
  const std::span<float> params = module.network().params();
  comm_->broadcast(std::as_writable_bytes(params), 0);
  GradReducerOptions reducer_options;
  reducer_options.bucket_cap_bytes = static_cast<std::size_t>(options_.bucket_cap_mb * (1 << 20));
  reducer_options.first_bucket_cap_bytes = std::min(reducer_options.first_bucket_cap_bytes,
                                                    reducer_options.bucket_cap_bytes);
  reducer_options.overlap = !options_.no_overlap;
  loop.reducer = std::make_unique<GradReducer>(*comm_, module.network(), reducer_options);
  loop.layer_hook = loop.reducer->layer_hook();
}

// Spans for every phase switch and allreduce, in a buffer sized for the whole run up front.
void Trainer::start_trace(Loop& loop) {
  const int64_t samples = (loop.train_spec.dataset->size() + comm_->size() - 1) / comm_->size();
  const int64_t batches = (samples + loop.train_spec.batch_size - 1) / loop.train_spec.batch_size;
  const int64_t buckets = loop.reducer ? static_cast<int64_t>(loop.reducer->num_buckets()) : 0;
  int64_t epochs = options_.max_epochs;
  if (options_.max_steps > 0) {
    const int64_t steps_per_epoch = (batches + options_.accumulate_grad_batches - 1) / options_.accumulate_grad_batches;
    const int64_t needed = (options_.max_steps + steps_per_epoch - 1) / steps_per_epoch;
    epochs = epochs < 0 ? needed : std::min(epochs, needed);
  }
  constexpr int64_t kMaxSpans = int64_t{1} << 22;  // 4 Mi spans, 160 MB: beyond it spans are counted, not kept
  const int64_t planned = epochs * (batches * (8 + buckets) + 16) + 64;
  spans_ = std::make_unique<SpanBuffer>(static_cast<std::size_t>(std::min(planned, kMaxSpans)));
  clock_.record_spans(spans_.get());
  if (loop.reducer) loop.reducer->record_spans(spans_.get());
  loop.train_loader->record_spans(static_cast<std::size_t>(std::min(epochs * batches + 16, kMaxSpans)));
  // Rank r's clock + offset = rank zero's clock, read right after a barrier on every rank
  // (accurate to the barrier's exit skew, microseconds; on one machine the clocks agree).
  if (comm_->size() > 1) {
    comm_->barrier();
    const std::vector<double> now = comm_->allgather(static_cast<double>(steady_now_ns()));
    clock_offset_ns_ = static_cast<int64_t>(now[0] - now[comm_->rank()]);
  }
}

// After the rank is pinned: the monitor watches the cores this process may run on.
void Trainer::start_monitor() {
  if (options_.monitor_interval_ms == 0) return;
  MonitorOptions monitor_options;
  monitor_options.interval_ms = options_.monitor_interval_ms;
  monitor_options.gpu = options_.accelerator == "cuda";
  if (options_.monitor_mode == "per-step") {
    // The seed's habit in full: NVML is loaded, initialised and shut down in every step,
    // whether or not a GPU is there (without a driver the failed load is paid each time).
    monitor_options.gpu = true;
    probe_ = std::make_unique<PerStepProbe>(monitor_options);
  } else {
    monitor_ = std::make_unique<DeviceMonitor>(monitor_options);
    monitor_->start();
  }
}

// device_<rank>_utilization of every rank (the seed's metric), gathered for logging.
Metrics Trainer::device_utilization() {
  if (!monitor_ && !probe_) return {};
  const double mine = monitor_ ? monitor_->latest().utilization() : probed_utilization_;
  const std::vector<double> all = comm_->allgather(mine);
  Metrics out;
  for (std::size_t r = 0; r < all.size(); ++r) {
    if (all[r] >= 0) out.emplace_back("device_" + std::to_string(r) + "_utilization", all[r]);
  }
  return out;
}

// The end sample, taken before the summary and the trace are written, and logged: every run,
// however short, ends with a device_<rank>_utilization row in its metrics.
void Trainer::stop_monitor() {
  if (monitor_) monitor_->stop();
  const Metrics utilization = device_utilization();
  if (utilization.empty()) return;
  // After the last epoch the loop's counter is one past it.
  const int64_t epoch = options_.max_epochs >= 0 ? std::min(epoch_, options_.max_epochs - 1) : epoch_;
  for (auto& logger : loggers_) logger->log_metrics(utilization, epoch, std::max<int64_t>(global_step_ - 1, 0));
  flush_loggers();
}

// What the monitor measured (the background samples, or the per-step probe's readings), on
// the steady clock.
std::vector<UtilizationPoint> Trainer::utilization_points() const {
  std::vector<UtilizationPoint> points;
  if (!monitor_ && !probe_) return points;
  const int64_t started = steady_ns(monitor_ ? monitor_->started_at() : probe_->started_at());
  for (const DeviceSample& s : monitor_ ? monitor_->samples() : probe_->samples()) {
    if (s.utilization() >= 0) points.push_back({started + static_cast<int64_t>(s.seconds * 1e9), s.utilization()});
  }
  return points;
}

// --init-from (parameters; rank zero's are broadcast) and --ckpt-path (everything, on
// every rank, so each has the optimizer state too).
void Trainer::restore(LightningModule& module, Loop& loop) {
  if (!options_.init_from.empty() && is_global_zero()) load_parameters(options_.init_from, module.network());
  if (options_.ckpt_path.empty()) return;
  const LoadedCheckpoint checkpoint = read_checkpoint(options_.ckpt_path);
  restore_checkpoint(checkpoint, module.network(), *loop.optimizer, loop.optimizer_kind);
  const TrainingPosition& at = checkpoint.position;
  epoch_ = at.epoch;
  global_step_ = at.global_step;
  stats_.optimizer_steps = global_step_;
  resume_batch_ = at.next_batch;
  if (at.world_size != comm_->size() && at.next_batch > 0) {
    // Another world shards the epoch differently: its micro-batch count does not carry over.
    if (is_global_zero()) {
      std::fprintf(stderr,
                   "ddpscope: the checkpoint was written by %d rank(s) inside epoch %lld; with %d rank(s) training "
                   "resumes at the start of that epoch\n",
                   at.world_size, static_cast<long long>(at.epoch), comm_->size());
    }
    resume_batch_ = 0;
  }
}

// A checkpoint at --max-epochs or --max-steps leaves nothing to do: fit() says so and
// returns, with no run folder and no throughput of zero work.
bool Trainer::nothing_left_to_train() const {
  if (options_.ckpt_path.empty()) return false;
  return (options_.max_epochs >= 0 && epoch_ >= options_.max_epochs) ||
         (options_.max_steps > 0 && global_step_ >= options_.max_steps);
}

// The position after `next_batch` micro-batches of `epoch` (an epoch's end: the next epoch).
void Trainer::save_checkpoint_files(LightningModule& module, Loop& loop, int64_t epoch, int64_t next_batch,
                                    bool periodic) {
  if (!is_global_zero()) return;
  const TrainingPosition position{epoch, next_batch, global_step_, comm_->size(), options_.seed};
  const auto folder = log_dir_ / "checkpoints";
  std::filesystem::create_directories(folder);
  if (periodic) {
    save_checkpoint(folder / fmt::format("epoch={}-step={}.safetensors", epoch - 1, global_step_), module.network(),
                    *loop.optimizer, loop.optimizer_kind, position, hparams_);
  }
  save_checkpoint(folder / "last.safetensors", module.network(), *loop.optimizer, loop.optimizer_kind, position,
                  hparams_);
}

// After an optimizer step: every rank learns whether any was signalled (a signal may reach
// the ranks at different steps), and then all stop at the same step with a checkpoint.
void Trainer::stop_if_signalled(LightningModule& module, Loop& loop, int64_t epoch, int64_t next_batch) {
  int signal = StopSignals::pending();
  if (comm_->size() > 1) {
    // Every rank stops with the same signal (SIGINT if any rank got one), so they exit alike.
    std::vector<double> seen = {signal == SIGINT ? 1.0 : 0.0, signal == SIGTERM ? 1.0 : 0.0};
    comm_->allreduce_sum(std::span<double>(seen));
    signal = seen[0] > 0 ? SIGINT : seen[1] > 0 ? SIGTERM : 0;
  }
  if (signal == 0) return;
  const int sig = signal;
  progress_.finish();
  save_checkpoint_files(module, loop, epoch, next_batch, /*periodic=*/false);
  flush_loggers();
  const auto path = log_dir_ / "checkpoints" / "last.safetensors";
  throw StopRequested(sig, fmt::format("stopped by {} at epoch {}, optimizer step {}; the checkpoint {} holds the "
                                       "position. Resume with the same options and --ckpt-path {}",
                                       signal_name(sig), epoch, global_step_, path.string(),
                                       path.string()));
}

void Trainer::fit(LightningModule& module, LightningDataModule& data) {
  Loop loop;
  StopSignals signals;
  setup(module, data, loop);
  if (nothing_left_to_train()) {
    if (is_global_zero()) {
      const bool by_steps = options_.max_steps > 0 && global_step_ >= options_.max_steps;
      std::printf("Nothing left to train: the checkpoint %s is at epoch %lld, optimizer step %lld, which %s %lld "
                  "has reached; raise %s to train further\n",
                  options_.ckpt_path.c_str(), static_cast<long long>(epoch_), static_cast<long long>(global_step_),
                  by_steps ? "--max-steps" : "--max-epochs",
                  static_cast<long long>(by_steps ? options_.max_steps : options_.max_epochs),
                  by_steps ? "--max-steps" : "--max-epochs");
    }
    return;
  }
  try {
    for (; options_.max_epochs < 0 || epoch_ < options_.max_epochs; ++epoch_) {
      const bool completed = train_epoch(module, loop);
      if (completed) {
        stats_.epochs = epoch_ + 1;
        if ((epoch_ + 1) % options_.check_val_every_n_epoch == 0) validate(module, loop);
        if (options_.checkpoint_every_n_epochs > 0 && (epoch_ + 1) % options_.checkpoint_every_n_epochs == 0) {
          clock_.enter(Phase::kLogging);
          save_checkpoint_files(module, loop, epoch_ + 1, 0, /*periodic=*/true);
        }
      }
      clock_.enter(Phase::kLogging);
      flush_loggers();
      if (!completed) break;
      if (epoch_ + 1 < options_.max_epochs || options_.max_epochs < 0) stop_if_signalled(module, loop, epoch_ + 1, 0);
      stats_.last_epoch_end_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      if (stats_.first_epoch_end_seconds == 0) stats_.first_epoch_end_seconds = stats_.last_epoch_end_seconds;
    }
  } catch (...) {
    progress_.finish();
    try {
      flush_loggers();  // keep what was logged before the failure
    } catch (...) {
    }
    throw;
  }
  module.sink_ = nullptr;
  finish(module, loop);
}

bool Trainer::train_epoch(LightningModule& module, Loop& loop) {
  const Dataset& dataset = *loop.train_spec.dataset;
  std::vector<int64_t> order = epoch_order(dataset.size(), loop.train_spec.shuffle, options_.seed, epoch_);
  if (comm_->size() > 1) order = shard_for_rank(order, comm_->size(), comm_->rank());  // DistributedSampler
  const int64_t full = (static_cast<int64_t>(order.size()) + loop.train_spec.batch_size - 1) / loop.train_spec.batch_size;
  const int64_t limit = options_.limit_train_batches_is_count
                            ? static_cast<int64_t>(options_.limit_train_batches)
                            : std::max<int64_t>(1, static_cast<int64_t>(full * options_.limit_train_batches));
  // A resumed epoch skips the micro-batches its checkpoint had done.
  const int64_t batches = std::min(full, limit);
  const int64_t skip = std::min(resume_batch_, batches);
  resume_batch_ = 0;
  order.erase(order.begin(), order.begin() + std::min<int64_t>(skip * loop.train_spec.batch_size, order.size()));
  Loader& loader = *loop.train_loader;
  loader.start_epoch(epoch_, std::move(order), batches - skip);

  Mlp& net = module.network();
  const int64_t accumulate = options_.accumulate_grad_batches;
  module.sink_ = &train_metrics_;
  module.training_ = true;
  module.loss_scale_ = 1.0f / static_cast<float>(accumulate);  // Lightning divides the loss by k

  Batch batch;
  for (int64_t i = skip;; ++i) {
    clock_.enter(Phase::kData);
    if (!loader.next(batch)) break;
    // Lightning steps on every k-th micro-batch and on the last batch of the epoch.
    const bool step_optimizer = (i + 1) % accumulate == 0 || i + 1 == batches;

    if (probe_) {  // the seed's habit: initialise, read every device, shut down, every step
      clock_.enter(Phase::kMonitor);
      probed_utilization_ = probe_->probe_once().utilization();
    }
    clock_.enter(Phase::kForward);
    module.batch_size_ = batch.size;
    const double loss = module.training_step(batch, i);
    if (!std::isfinite(loss)) {
      // Adam's normalised steps are the usual cure for SGD's divergence; a run on Adam already has them.
      const char* cure = loop.optimizer_kind == OptimizerKind::kSgd ? ", or use --optimizer adam" : "";
      throw Error(ExitCode::kOther,
                  fmt::format("training loss is {} at epoch {}, batch {}, optimizer step {}; stopping. Lower --lr "
                              "or check the data for extreme values{}",
                              loss, epoch_, i, global_step_, cure));
    }
    stats_.final_train_loss = loss;

    clock_.enter(Phase::kBackward);
    if (loop.reducer) {
      // Lightning's no_sync: only the micro-batch that steps the optimizer communicates.
      const bool sync = step_optimizer || options_.sync_every_micro_batch;
      loop.reducer->begin_backward(sync);
      net.backward(batch.x, batch.size, loop.layer_hook);
      if (sync) {
        clock_.enter(Phase::kCommWait);
        loop.reducer->finish();
      }
    } else {
      net.backward(batch.x, batch.size);
    }
    stats_.train_samples += batch.size;

    if (step_optimizer) {
      clock_.enter(Phase::kOptimizer);
      loop.optimizer->step(net.params(), net.grads());
      net.zero_grads();
      ++global_step_;
      stats_.optimizer_steps = global_step_;
      ++stats_.optimizer_steps_run;
      if (global_step_ % options_.log_every_n_steps == 0) {
        clock_.enter(Phase::kLogging);
        Metrics metrics = global_mean(train_metrics_.latest());
        for (auto& metric : device_utilization()) metrics.push_back(std::move(metric));
        log_metrics(metrics, global_step_ - 1);
      }
      if (options_.max_steps > 0 && global_step_ >= options_.max_steps) return false;
      if (i + 1 < batches) stop_if_signalled(module, loop, epoch_, i + 1);
    }
    if (progress_.enabled()) {
      clock_.enter(Phase::kLogging);
      progress_.update(epoch_, options_.max_epochs, i + 1, batches, loss, /*force=*/i + 1 == batches);
    }
  }
  return true;
}

void Trainer::validate(LightningModule& module, Loop& loop) {
  clock_.enter(Phase::kValidation);
  const Dataset& dataset = *loop.val_spec.dataset;
  Loader& loader = *loop.val_loader;
  // Each rank validates every W-th sample without DistributedSampler's padding, so that
  // the reduced sums give the exact mean over the validation set.
  std::vector<int64_t> order = epoch_order(dataset.size(), false, options_.seed, epoch_);
  if (comm_->size() > 1) {
    std::vector<int64_t> mine;
    for (std::size_t i = comm_->rank(); i < order.size(); i += comm_->size()) mine.push_back(order[i]);
    order = std::move(mine);
  }
  loader.start_epoch(epoch_, std::move(order));
  val_metrics_.clear();
  module.sink_ = &val_metrics_;
  module.training_ = false;
  Batch batch;
  while (loader.next(batch)) {
    module.batch_size_ = batch.size;
    module.validation_step(batch, batch.index);
  }
  module.training_ = true;
  module.sink_ = &train_metrics_;

  const Metrics epoch_means = validation_means(*comm_, val_metrics_.entries());
  for (const auto& [name, mean] : epoch_means) {
    if (name == "val_loss") stats_.final_val_loss = mean;
  }
  clock_.enter(Phase::kLogging);
  log_metrics(epoch_means, std::max<int64_t>(global_step_ - 1, 0));
}

Metrics Trainer::global_mean(const Metrics& local) {
  if (comm_->size() == 1) return local;
  std::vector<double> values;
  for (const auto& [name, value] : local) values.push_back(value / comm_->size());
  comm_->allreduce_sum(std::span<double>(values));
  Metrics out = local;
  for (std::size_t i = 0; i < out.size(); ++i) out[i].second = values[i];
  return out;
}

void Trainer::log_metrics(const Metrics& metrics, int64_t step) {
  if (metrics.empty()) return;
  for (auto& logger : loggers_) logger->log_metrics(metrics, epoch_, step);
}

// Flushes every logger even when one fails, then reports the first failure.
void Trainer::flush_loggers() {
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

void Trainer::finish(LightningModule& module, const Loop& loop) {
  progress_.finish();
  if (stats_.final_train_loss) {
    stats_.final_train_loss = global_mean({{"train_loss", *stats_.final_train_loss}})[0].second;
  }
  const AllreduceStats allreduce = loop.reducer ? loop.reducer->stats() : AllreduceStats{};
  clock_.enter(Phase::kLogging);
  stats_.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  stats_.world_size = comm_->size();
  stats_.strategy = comm_->size() > 1 ? "ddp" : options_.strategy == "auto" ? "single" : options_.strategy;
  stats_.training_flops_per_sample = module.network().training_flops_per_sample();

  // Every rank's phases and communication, gathered by rank zero.
  const int world = comm_->size();
  stats_.phases_per_rank.assign(world, PhaseSeconds{});
  std::vector<std::array<int64_t, kPhaseCount>> phase_calls_per_rank(world);  // for the profiler table
  for (std::size_t p = 0; p < kPhaseCount; ++p) {
    const std::vector<double> seconds = comm_->allgather(clock_.seconds()[p]);
    const std::vector<uint64_t> calls = comm_->allgather(static_cast<uint64_t>(clock_.calls()[p]));
    for (int r = 0; r < world; ++r) {
      stats_.phases_per_rank[r][p] = seconds[r];
      phase_calls_per_rank[r][p] = static_cast<int64_t>(calls[r]);
    }
  }
  stats_.hosts.clear();
  const std::string host = comm_->host_name();
  for (const auto& name : gather_at_rank_zero(*comm_, std::as_bytes(std::span(host)))) {
    stats_.hosts.emplace_back(reinterpret_cast<const char*>(name.data()), name.size());
  }
  const std::vector<uint64_t> samples = comm_->allgather(static_cast<uint64_t>(stats_.train_samples));
  stats_.train_samples = 0;
  for (uint64_t s : samples) stats_.train_samples += static_cast<int64_t>(s);
  stats_.allreduce_per_rank.clear();
  for (int r = 0; r < world; ++r) stats_.allreduce_per_rank.push_back({});
  auto gather_field = [&](auto field) {
    const std::vector<double> all = comm_->allgather(static_cast<double>(allreduce.*field));
    for (int r = 0; r < world; ++r) stats_.allreduce_per_rank[r].*field = static_cast<std::remove_reference_t<decltype(allreduce.*field)>>(all[r]);
  };
  gather_field(&AllreduceStats::calls);
  gather_field(&AllreduceStats::bytes);
  gather_field(&AllreduceStats::seconds);
  gather_field(&AllreduceStats::in_flight_seconds);
  gather_field(&AllreduceStats::hidden_seconds);
  stats_.allreduce = stats_.allreduce_per_rank[0];
  stop_monitor();
  gather_utilization();
  if (options_.profiler == "trace") write_trace(loop);
  if (!is_global_zero()) return;

  save_parameters(log_dir_ / "final.safetensors", module.network(), hparams_);
  // After the wall clock stopped: the core's GEMM peak, for the FLOP share of the summary.
  stats_.gemm_peak_flops_per_second = measure_gemm_peak_flops();
  stats_.options = hparams_;
  write_file_atomically(log_dir_ / "summary.json", to_json(stats_).dump(2) + "\n");
  if (options_.profiler != "none") {
    std::vector<RankPhases> ranks(world);
    for (int r = 0; r < world; ++r) ranks[r] = {stats_.phases_per_rank[r], phase_calls_per_rank[r], stats_.hosts[r]};
    std::fputs(profiler_table(ranks, stats_.wall_seconds).c_str(), stdout);
    const double rate = stats_.training_flops_per_sample * stats_.train_samples / stats_.wall_seconds;
    std::printf("Throughput: %.0f samples/s, %.1f optimizer steps/s, %.1f GFLOP/s of model FLOPs (%.0f %% of %d x %.0f GFLOP/s measured GEMM peak)\n",
                stats_.train_samples / stats_.wall_seconds, stats_.optimizer_steps_run / stats_.wall_seconds, rate * 1e-9,
                100.0 * rate / world / stats_.gemm_peak_flops_per_second, world, stats_.gemm_peak_flops_per_second * 1e-9);
  }
}

// Every rank's utilization over the run for summary.json: (seconds since the run's start,
// percent), thinned to at most kMaxPoints per rank.
void Trainer::gather_utilization() {
  constexpr std::size_t kMaxPoints = 300;
  const std::vector<UtilizationPoint> points = utilization_points();
  const std::size_t stride = points.size() / kMaxPoints + 1;
  std::vector<std::pair<double, double>> mine;
  for (std::size_t i = 0; i < points.size(); i += stride) {
    mine.emplace_back((points[i].time_ns - steady_ns(start_)) * 1e-9, points[i].percent);
  }
  const auto parts = gather_at_rank_zero(*comm_, std::as_bytes(std::span(mine)));
  stats_.utilization_per_rank.clear();
  for (const auto& part : parts) {
    std::vector<std::pair<double, double>> series(part.size() / sizeof(std::pair<double, double>));
    if (!part.empty()) std::memcpy(static_cast<void*>(series.data()), part.data(), part.size());
    stats_.utilization_per_rank.push_back(std::move(series));
  }
}

// Every rank's spans at rank zero, aligned to rank zero's clock, written as trace.json.
void Trainer::write_trace(const Loop& loop) {
  RankTrace mine;
  mine.rank = comm_->rank();
  mine.host = comm_->host_name();
  mine.clock_offset_ns = clock_offset_ns_;
  mine.spans.assign(spans_->begin(), spans_->end());
  for (const Span& fill : loop.train_loader->spans()) mine.spans.push_back(fill);  // the loader threads' track
  mine.dropped = spans_->dropped();
  mine.utilization = utilization_points();
  const std::vector<std::vector<std::byte>> parts = gather_at_rank_zero(*comm_, serialize_rank_trace(mine));
  if (!is_global_zero()) return;
  std::vector<RankTrace> ranks;
  for (const auto& part : parts) ranks.push_back(deserialize_rank_trace(part));
  write_file_atomically(log_dir_ / "trace.json", chrome_trace_json(ranks, steady_ns(start_)));
}

}  // namespace ddp
