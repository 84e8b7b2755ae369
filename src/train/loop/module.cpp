#include "ddpscope/module.h"

#include "base/check.h"
#include "ddpscope/error.h"
#include "tensor/kernels.h"
#include "train/loop/metric_sink.h"

namespace ddp {

LightningModule::LightningModule(const MlpShape& shape, uint64_t seed) : network_(shape), workspace_(shape, 1) {
  network_.init_like_pytorch(seed);
}

void LightningModule::reserve_batch(int64_t max_batch) {
  DDP_CHECK_GT(max_batch, 0, "reserve_batch needs a batch of at least one row");
  if (max_batch != workspace_.max_batch()) workspace_ = Workspace(network_.shape(), max_batch);
}

void LightningModule::log_to(MetricSink* sink, int64_t batch_size) {
  sink_ = sink;
  batch_size_ = batch_size;
}

const float* LightningModule::forward(const Batch& batch) { return network_.forward(batch.x, batch.size, workspace_); }

Loss LightningModule::mse_loss(const float* y_pred, const Batch& batch) const {
  const int64_t cols = network_.shape().output_dim;
  return Loss::mse(ddp::mse_loss(y_pred, batch.y, batch.size, cols), y_pred, batch.y, batch.size, cols);
}

void LightningModule::log(std::string_view name, double value) {
  if (sink_ != nullptr) sink_->record(name, value, batch_size_);
}

}  // namespace ddp
