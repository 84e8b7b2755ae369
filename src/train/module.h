#pragma once
// The user's side of training, in the spirit of Lightning: a LightningModule says what a
// training and a validation step compute and which optimizer to use; a
// LightningDataModule says where the batches come from. The Trainer drives both.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "data/dataset.h"
#include "data/loader.h"
#include "nn/mlp.h"
#include "optim/optimizer.h"

namespace ddp {

class MetricSink;

class LightningModule {
 public:
  // Builds the network with PyTorch's nn.Linear initialisation from seed.
  explicit LightningModule(const MlpShape& shape, uint64_t seed = 0);
  virtual ~LightningModule() = default;

  // Forward and loss of one micro-batch; the Trainer runs backward and the optimizer.
  virtual double training_step(const Batch& batch, int64_t batch_idx) = 0;
  virtual double validation_step(const Batch& batch, int64_t batch_idx) = 0;
  virtual OptimizerConfig configure_optimizers() = 0;

  Mlp& network() { return *network_; }
  const Mlp& network() const { return *network_; }

 protected:
  // self(x): the network's (B, output_dim) output for the batch.
  const float* forward(const Batch& batch);
  // MSELoss()(y_pred, y), with matching shapes (B, output_dim). In a training step it also
  // prepares backward (the gradient, scaled for gradient accumulation).
  double mse_loss(const float* y_pred, const Batch& batch);
  // self.log(name, value): the last value per logging step in training, the batch-size
  // weighted mean over the epoch in validation (Lightning's defaults).
  void log(std::string_view name, double value);

 private:
  friend class Trainer;
  std::unique_ptr<Mlp> network_;
  MetricSink* sink_ = nullptr;  // set by the Trainer while it runs steps
  bool training_ = false;
  float loss_scale_ = 1.0f;
  int64_t batch_size_ = 0;  // of the step being run, for the weighted epoch mean
};

// Where a loader's samples come from and how they are batched.
struct DataLoaderSpec {
  std::shared_ptr<const Dataset> dataset;
  int64_t batch_size = 1;
  bool shuffle = false;
  int num_workers = 0;
};

class LightningDataModule {
 public:
  virtual ~LightningDataModule() = default;
  virtual void setup() {}
  virtual DataLoaderSpec train_dataloader() = 0;
  virtual DataLoaderSpec val_dataloader() = 0;
};

}  // namespace ddp
