#pragma once
// How much work a configuration does, counted as Lightning and PyTorch count it: samples,
// micro-batches, optimizer steps, gradient synchronisations, logging events, validation
// batches and the model's GEMM FLOPs. The scaling model (scaling_model.h) prices these
// counts; everything here is exact integer arithmetic on the configuration.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>
#include "train/config/run_config.h"

namespace ddp {

struct Config;      // train/config.h
struct RunSummary;  // train/run_summary.h

// The parts of a run's configuration that decide its work (names as in summary.json's
// "config"), plus the interconnect a prediction assumes.
struct WorkloadConfig {
  int devices = 1;  // W, ranks
  int64_t dataset_size = 5000;
  int64_t batch_size = 256;  // B, per device
  int64_t input_dim = 10;
  int64_t hidden_size = 256;
  int64_t hidden_layers = 3;
  int64_t output_dim = 1;
  int64_t epochs = 200;                 // completed epochs (a summary's "epochs", a config's max_epochs)
  int64_t accumulate_grad_batches = 1;  // k
  int64_t log_every_n_steps = 50;
  int64_t check_val_every_n_epoch = 1;
  BatchLimit limit_train_batches;
  double bucket_cap_mb = 25.0;
  bool sync_every_micro_batch = false;
  bool monitor_per_step = false;          // --monitor-mode per-step: a probe in every micro-batch
  bool on_gpu = false;                    // trained on a GPU (summary.json's "accelerator": "cuda")
  bool cuda_graph = true;                 // on a GPU: one CUDA graph per step (false: --no-cuda-graph)
  std::string interconnect = "measured";  // "measured" (the fitted alpha, beta) or a preset name
  bool operator==(const WorkloadConfig&) const = default;
};

struct WorkloadCounts {
  // Training, per rank and epoch. DistributedSampler pads the epoch by wrap-around to a
  // multiple of W: samples_per_rank = ceil(n / W).
  int64_t samples_per_rank = 0;
  int64_t micro_batches_per_epoch = 0;  // ceil(samples_per_rank / B), last partial kept; then limit_train_batches
  int64_t train_samples_per_epoch = 0;  // samples in those micro-batches
  // Lightning steps on every k-th micro-batch and on the epoch's last one: ceil(micro / k).
  int64_t optimizer_steps_per_epoch = 0;
  int64_t syncs_per_epoch = 0;  // gradient allreduces: steps (micro-batches with sync_every_micro_batch); 0 on 1 device
  // Whole run.
  int64_t optimizer_steps = 0;  // epochs * steps per epoch
  int64_t logging_events = 0;   // floor(optimizer_steps / log_every_n_steps)
  int64_t validations = 0;      // floor(epochs / check_val_every_n_epoch)
  // Validation, rank zero, per validation: the set is split without padding (rank r takes
  // r, r+W, ...), so rank zero has ceil(n / W) samples.
  int64_t val_samples_rank0 = 0;
  int64_t val_batches_rank0 = 0;
  // Model: GEMM FLOPs per sample (forward 2*in*out per layer; training adds dW 2*in*out and
  // dX 2*in*out except for the first layer) and parameters (sum of in*out + out).
  double forward_flops_per_sample = 0;
  double training_flops_per_sample = 0;
  int64_t parameters = 0;
  std::vector<int64_t> bucket_bytes;  // gradient buckets of one sync (float32), DDP's plan
  // A GPU step's launches (src/gpu/train_step_gpu_cuda.cpp), counted whatever the accelerator,
  // with L = hidden_layers + 1 linear layers: per micro-batch the batch's generation, L forward
  // GEMMs and L - 1 ReLUs, the loss, L ReLU/bias-gradient kernels, L weight-gradient and L - 1
  // input-gradient GEMMs (5L); per optimizer step the gradients' memset, the optimizer and the
  // step cursor (3); per validation batch the generation, L GEMMs, L - 1 ReLUs and the loss
  // (2L + 1).
  int64_t kernels_per_micro_batch = 0;
  int64_t kernels_per_optimizer_step = 0;
  int64_t kernels_per_val_batch = 0;
  int64_t kernels = 0;  // the whole run's launches: training steps and rank zero's validations
};

// Throws UsageError when a field is out of range (devices, sizes, k, ... < 1).
WorkloadCounts count_workload(const WorkloadConfig& config);

// Ranks that validate rank r's share of n samples: ceil or floor of n / W.
int64_t validation_samples_for_rank(int64_t dataset_size, int devices, int rank);

// A run's workload from its summary: its options through the option table, on world_size
// ranks, for the epochs that completed. Throws DataError naming an option it cannot read.
WorkloadConfig workload_from_summary(const RunSummary& summary);

// A run's workload from its typed configuration on `devices` ranks (the configuration's own
// device count, often 0 for auto, is not read): what the doctor runs and predicts.
WorkloadConfig workload_for(const Config& config, int devices);

// Whether workload_for reads this option (snake_case): the options whose value changes the
// work, and so the scaling model's time.
bool is_workload_key(std::string_view key);

}  // namespace ddp
