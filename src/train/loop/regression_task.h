#pragma once
// The seed's model and data module driven by options: what `ddpscope train` runs. The
// steps are the seed's (forward, MSE, log), with matching output and target shapes.
#include <memory>
#include <optional>

#include "ddpscope/config.h"
#include "ddpscope/module.h"
#include "train/config/run_config.h"

namespace ddp {

class RegressionModel : public LightningModule {
 public:
  explicit RegressionModel(const Config& config);
  Loss training_step(const Batch& batch, int64_t batch_idx) override;
  Loss validation_step(const Batch& batch, int64_t batch_idx) override;
  OptimizerConfig configure_optimizers() override { return optimizer_; }

 private:
  OptimizerConfig optimizer_;
};

class RegressionDataModule : public LightningDataModule {
 public:
  explicit RegressionDataModule(const Config& config) : options_(config.data), model_(config.model) {}
  void setup() override;  // once: a second call keeps what the first loaded
  // --data csv:PATH: the file's rows, whatever --dataset-size says (loads it: a DataError names
  // what is wrong). nullopt for generated data, whose size is --dataset-size.
  std::optional<int64_t> file_rows();
  DataLoaderSpec train_dataloader() override;
  DataLoaderSpec val_dataloader() override;

 private:
  DataOptions options_;
  MlpShape model_;
  std::shared_ptr<const Dataset> dataset_;
};

}  // namespace ddp
