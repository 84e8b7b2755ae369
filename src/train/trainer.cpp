#include "train/trainer.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "data/sampler.h"
#include "log/csv_logger.h"
#include "log/file_io.h"
#include "log/run_dir.h"
#include "tensor/gemm.h"

namespace ddp {

struct Trainer::Loop {
  DataLoaderSpec train_spec;
  DataLoaderSpec val_spec;
  std::unique_ptr<Loader> train_loader;
  std::unique_ptr<Loader> val_loader;
  std::unique_ptr<Optimizer> optimizer;
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
      start_(std::chrono::steady_clock::now()),
      progress_(options_.progress_bar) {
  clock_.start(Phase::kStartup);
}

void Trainer::setup(LightningModule& module, LightningDataModule& data, Loop& loop) {
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

  loop.optimizer = make_optimizer(module.configure_optimizers(), module.network().num_params());
  loop.train_loader = std::make_unique<Loader>(*loop.train_spec.dataset, loop.train_spec.batch_size,
                                               loop.train_spec.num_workers);
  loop.val_loader =
      std::make_unique<Loader>(*loop.val_spec.dataset, loop.val_spec.batch_size, loop.val_spec.num_workers);

  log_dir_ = make_run_dir(options_.default_root_dir, options_.name, options_.version);
  write_file_atomically(log_dir_ / "hparams.yaml", hparams_yaml(hparams_));
  for (size_t start = 0; start <= options_.logger.size();) {
    const size_t comma = std::min(options_.logger.find(',', start), options_.logger.size());
    const std::string name = options_.logger.substr(start, comma - start);
    if (name == "csv") loggers_.push_back(std::make_unique<CsvLogger>(log_dir_ / "metrics.csv"));
    start = comma + 1;
  }
}

void Trainer::fit(LightningModule& module, LightningDataModule& data) {
  Loop loop;
  setup(module, data, loop);
  try {
    for (epoch_ = 0; options_.max_epochs < 0 || epoch_ < options_.max_epochs; ++epoch_) {
      const bool completed = train_epoch(module, loop);
      if (completed) {
        stats_.epochs = epoch_ + 1;
        if ((epoch_ + 1) % options_.check_val_every_n_epoch == 0) validate(module, loop);
      }
      clock_.enter(Phase::kLogging);
      flush_loggers();
      if (!completed) break;
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
  finish();
}

bool Trainer::train_epoch(LightningModule& module, Loop& loop) {
  const Dataset& dataset = *loop.train_spec.dataset;
  std::vector<int64_t> order = epoch_order(dataset.size(), loop.train_spec.shuffle, options_.seed, epoch_);
  const int64_t full = (static_cast<int64_t>(order.size()) + loop.train_spec.batch_size - 1) / loop.train_spec.batch_size;
  const int64_t limit = options_.limit_train_batches_is_count
                            ? static_cast<int64_t>(options_.limit_train_batches)
                            : std::max<int64_t>(1, static_cast<int64_t>(full * options_.limit_train_batches));
  Loader& loader = *loop.train_loader;
  loader.start_epoch(epoch_, std::move(order), std::min(full, limit));

  Mlp& net = module.network();
  const int64_t accumulate = options_.accumulate_grad_batches;
  module.sink_ = &train_metrics_;
  module.training_ = true;
  module.loss_scale_ = 1.0f / static_cast<float>(accumulate);  // Lightning divides the loss by k

  Batch batch;
  for (int64_t i = 0;; ++i) {
    clock_.enter(Phase::kData);
    if (!loader.next(batch)) break;
    // Lightning steps on every k-th micro-batch and on the last batch of the epoch.
    const bool step_optimizer = (i + 1) % accumulate == 0 || i + 1 == loader.num_batches();

    clock_.enter(Phase::kForward);
    module.batch_size_ = batch.size;
    const double loss = module.training_step(batch, i);
    if (!std::isfinite(loss)) {
      throw Error(ExitCode::kOther,
                  fmt::format("training loss is {} at epoch {}, batch {}, optimizer step {}; stopping. Lower --lr, "
                              "check the data for extreme values, or use --optimizer adam",
                              loss, epoch_, i, global_step_));
    }
    stats_.final_train_loss = loss;

    clock_.enter(Phase::kBackward);
    net.backward(batch.x, batch.size);
    stats_.train_samples += batch.size;

    if (step_optimizer) {
      clock_.enter(Phase::kOptimizer);
      loop.optimizer->step(net.params(), net.grads());
      net.zero_grads();
      ++global_step_;
      stats_.optimizer_steps = global_step_;
      if (global_step_ % options_.log_every_n_steps == 0) {
        clock_.enter(Phase::kLogging);
        log_metrics(train_metrics_.latest(), global_step_ - 1);
      }
      if (options_.max_steps > 0 && global_step_ >= options_.max_steps) return false;
    }
    if (progress_.enabled()) {
      clock_.enter(Phase::kLogging);
      progress_.update(epoch_, options_.max_epochs, i + 1, loader.num_batches(), loss);
    }
  }
  return true;
}

void Trainer::validate(LightningModule& module, Loop& loop) {
  clock_.enter(Phase::kValidation);
  const Dataset& dataset = *loop.val_spec.dataset;
  Loader& loader = *loop.val_loader;
  loader.start_epoch(epoch_, epoch_order(dataset.size(), false, options_.seed, epoch_));
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

  Metrics epoch_means;
  for (const MetricSink::Entry& e : val_metrics_.entries()) {
    epoch_means.emplace_back(e.name, e.weight > 0 ? e.weighted_sum / e.weight : 0.0);
    if (e.name == "val_loss") stats_.final_val_loss = epoch_means.back().second;
  }
  clock_.enter(Phase::kLogging);
  log_metrics(epoch_means, std::max<int64_t>(global_step_ - 1, 0));
}

void Trainer::log_metrics(const Metrics& metrics, int64_t step) {
  if (metrics.empty()) return;
  for (auto& logger : loggers_) logger->log_metrics(metrics, epoch_, step);
}

void Trainer::flush_loggers() {
  for (auto& logger : loggers_) logger->flush();
}

void Trainer::finish() {
  progress_.finish();
  clock_.enter(Phase::kLogging);
  stats_.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  stats_.strategy = options_.strategy == "auto" ? "single" : options_.strategy;
  stats_.phases_per_rank = {clock_.seconds()};
  write_file_atomically(log_dir_ / "summary.json", summary_json(stats_, hparams_).dump(2) + "\n");
}

}  // namespace ddp
