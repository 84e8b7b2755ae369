#include "train/module.h"

#include "tensor/kernels.h"
#include "train/metric_sink.h"

namespace ddp {

LightningModule::LightningModule(const MlpShape& shape, uint64_t seed)
    : network_(std::make_unique<Mlp>(shape, 1)) {
  network_->init_like_pytorch(seed);
}

const float* LightningModule::forward(const Batch& batch) { return network_->forward(batch.x, batch.size); }

double LightningModule::mse_loss(const float* y_pred, const Batch& batch) {
  if (training_) return network_->mse_loss_and_grad(batch.y, batch.size, loss_scale_);
  return ddp::mse_loss(y_pred, batch.y, batch.size, network_->shape().output_dim);
}

void LightningModule::log(std::string_view name, double value) {
  if (sink_ != nullptr) sink_->record(name, value, batch_size_);
}

}  // namespace ddp
