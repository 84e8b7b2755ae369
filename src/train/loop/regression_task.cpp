#include "train/loop/regression_task.h"
#include "train/config/run_config.h"

namespace ddp {

RegressionModel::RegressionModel(const Config& config)
    : LightningModule(config.model, config.data.seed), optimizer_(config.optimizer) {}

Loss RegressionModel::training_step(const Batch& batch, int64_t /*batch_idx*/) {
  const float* y_pred = forward(batch);
  const Loss loss = mse_loss(y_pred, batch);
  log("train_loss", loss);
  return loss;
}

Loss RegressionModel::validation_step(const Batch& batch, int64_t /*batch_idx*/) {
  const float* y_pred = forward(batch);
  const Loss loss = mse_loss(y_pred, batch);
  log("val_loss", loss);
  return loss;
}

void RegressionDataModule::setup() {
  if (dataset_) return;
  DatasetSpec spec;
  spec.kind = options_.data;
  spec.size = options_.dataset_size;
  spec.input_dim = model_.input_dim;
  spec.output_dim = model_.output_dim;
  spec.seed = options_.seed;
  dataset_ = make_dataset(spec);
}

std::optional<int64_t> RegressionDataModule::file_rows() {
  if (!options_.data.starts_with("csv:")) return std::nullopt;
  setup();
  return dataset_->size();
}

// As the seed: the training loader shuffles; validation reads the same dataset in order.
DataLoaderSpec RegressionDataModule::train_dataloader() {
  return {dataset_, options_.batch_size, options_.shuffle, options_.loader_workers};
}

DataLoaderSpec RegressionDataModule::val_dataloader() {
  return {dataset_, options_.batch_size, false, options_.loader_workers};
}

}  // namespace ddp
