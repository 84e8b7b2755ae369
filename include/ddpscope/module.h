#pragma once
// The user's side of training, in the spirit of Lightning: a LightningModule says what a
// training and a validation step compute and which optimizer to use; a
// LightningDataModule says where the batches come from. The Trainer drives both.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "ddpscope/dataset.h"
#include "ddpscope/loss.h"
#include "ddpscope/mlp.h"
#include "ddpscope/optimizer.h"
#include "ddpscope/workspace.h"

namespace ddp {

class MetricSink;

class LightningModule {
 public:
  // Builds the network with PyTorch's nn.Linear initialisation from seed.
  explicit LightningModule(const MlpShape& shape, uint64_t seed = 0);
  virtual ~LightningModule() = default;

  // Forward and loss of one micro-batch. The Loss returned by a training step must carry
  // its gradient (return what mse_loss gives): the Trainer seeds backward from it, then
  // runs the reducer and the optimizer.
  virtual Loss training_step(const Batch& batch, int64_t batch_idx) = 0;
  virtual Loss validation_step(const Batch& batch, int64_t batch_idx) = 0;
  virtual OptimizerConfig configure_optimizers() = 0;

  // The parameters and gradients, and the activations of the current step apart from them.
  Mlp& network() { return network_; }
  const Mlp& network() const { return network_; }
  Workspace& workspace() { return workspace_; }
  // Sizes the activations for batches of up to max_batch rows (> 0); forward refuses a
  // larger one. The Trainer calls it once before training, with its largest batch.
  void reserve_batch(int64_t max_batch);
  // Where self.log writes during the next step, weighted by its batch size (null: nowhere).
  void log_to(MetricSink* sink, int64_t batch_size);

 protected:
  // self(x): the network's (B, output_dim) output for the batch.
  const float* forward(const Batch& batch);
  // MSELoss()(y_pred, y), with matching shapes (B, output_dim); the Loss carries its gradient.
  Loss mse_loss(const float* y_pred, const Batch& batch) const;
  // self.log(name, value): the last value per logging step in training, the batch-size
  // weighted mean over the epoch in validation (Lightning's defaults).
  void log(std::string_view name, double value);
  void log(std::string_view name, const Loss& loss) { log(name, loss.value()); }

 private:
  Mlp network_;
  Workspace workspace_;
  MetricSink* sink_ = nullptr;
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
