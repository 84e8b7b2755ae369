// The seed's PyTorch Lightning script (shared/seed), written line for line against the
// ddpscope C++ API, with the seed's own Trainer: DDP on 3 devices (one CPU core each; on a
// machine with fewer cores the launcher says it oversubscribes). Started by hand, this
// process re-runs itself under mpirun as Lightning's DDP launcher re-runs the script.
// Differences, on purpose: the model's output and the target have the same shape (the
// seed's [B,1,1] vs [B,1] broadcast is a bug), and device utilization is sampled by the
// trainer's monitor instead of initialising NVML inside every step.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>

#include <ddpscope/ddpscope.h>

class SimpleDataset : public ddp::Dataset {
 public:
  explicit SimpleDataset(int64_t size) : size_(size) {}
  int64_t size() const override { return size_; }
  int64_t input_dim() const override { return 10; }
  int64_t output_dim() const override { return 1; }

  // Generate some random data: x ~ randn(10), y ~ randn(1), fresh for every epoch.
  void fill(int64_t epoch, std::span<const int64_t> indices, float* x, float* y) const override {
    const uint64_t key = ddp::stream_key(/*seed=*/0, ddp::kStreamData);
    for (std::size_t row = 0; row < indices.size(); ++row) {
      for (int group = 0; group < 3; ++group) {  // 12 normals: 10 inputs, 1 target, 1 spare
        const auto n = ddp::normal4(key, static_cast<uint64_t>(epoch), static_cast<uint64_t>(indices[row]) * 3 + group);
        for (int k = 0; k < 4; ++k) {
          const int column = group * 4 + k;
          if (column < 10) x[row * 10 + column] = n[k];
          if (column == 10) y[row] = n[k];
        }
      }
    }
  }

 private:
  int64_t size_;
};

class SimpleDataModule : public ddp::LightningDataModule {
 public:
  SimpleDataModule(int64_t batch_size, int64_t size) : batch_size_(batch_size), size_(size) {}

  void setup() override { dataset_ = std::make_shared<SimpleDataset>(size_); }

  ddp::DataLoaderSpec train_dataloader() override { return {dataset_, batch_size_, /*shuffle=*/true}; }

  ddp::DataLoaderSpec val_dataloader() override { return {dataset_, batch_size_}; }

 private:
  int64_t batch_size_;
  int64_t size_;
  std::shared_ptr<ddp::Dataset> dataset_;
};

class SimpleModel : public ddp::LightningModule {
 public:
  // fc1 Linear(10,256), fc2 Linear(256,256), fc3 Linear(256,256), fc4 Linear(256,1), ReLU between.
  SimpleModel() : LightningModule({.input_dim = 10, .hidden_size = 256, .hidden_layers = 3, .output_dim = 1}) {}

  ddp::Loss training_step(const ddp::Batch& batch, int64_t /*batch_idx*/) override {
    const float* y_pred = forward(batch);
    const ddp::Loss loss = mse_loss(y_pred, batch);
    log("train_loss", loss);
    return loss;
  }

  ddp::Loss validation_step(const ddp::Batch& batch, int64_t /*batch_idx*/) override {
    const float* y_pred = forward(batch);
    const ddp::Loss loss = mse_loss(y_pred, batch);
    log("val_loss", loss);
    return loss;
  }

  ddp::OptimizerConfig configure_optimizers() override { return {.kind = ddp::OptimizerKind::kAdam, .lr = 0.01}; }
};

int main() {
  const ddp::TrainerOptions options{
      .strategy = ddp::Strategy::kDdp, .devices = 3, .max_epochs = 200, .accumulate_grad_batches = 3};
  // Lightning's DDP launcher: the process started by hand runs the 3 ranks and returns their exit code.
  if (const std::optional<int> job = ddp::run_ranks_if_launcher(options)) return *job;

  SimpleDataModule data_module(/*batch_size=*/256, /*size=*/5000);
  SimpleModel model;

  const auto start_time = std::chrono::steady_clock::now();

  ddp::Trainer trainer(options, ddp::join_world(options));

  trainer.fit(model, data_module);
  if (trainer.is_global_zero()) {
    const double elapsed_time = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_time).count();
    std::printf("Training completed in %.2f seconds\n", elapsed_time);
    const ddp::TrainingStats stats = trainer.stats();
    std::printf("%lld epochs, %lld optimizer steps on %d devices, %.0f samples/s, final val_loss %.4f\n",
                static_cast<long long>(stats.epochs), static_cast<long long>(stats.optimizer_steps), stats.world_size,
                stats.samples_per_second, stats.final_val_loss.value_or(NAN));
  }
}
