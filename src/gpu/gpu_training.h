#pragma once
// The Trainer's GPU: the seed's step on one device (gpu/train_step_gpu.h) behind a
// header without CUDA's types, so that the Trainer builds alike with and without CUDA. The
// host keeps its Mlp and Optimizer as the checkpoints' copy: they are uploaded once and read
// back only where the Trainer writes them (checkpoints, the run's end). A build without CUDA
// has nothing to construct: check_accelerator refuses such a run before it starts.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ddpscope/layer_layout.h"
#include "ddpscope/optimizer.h"
#include "ddpscope/option_enums.h"
#include "dist/bucket_plan.h"
#include "gpu/gpu_data_spec.h"
#include "gpu/nccl_comm.h"
#include "observe/device_step_phases.h"

namespace ddp {

class GpuTrainStep;

struct GpuTrainingSpec {
  MlpShape shape;
  OptimizerConfig optimizer;
  Precision precision = Precision::k32True;
  bool cuda_graph = true;
  int64_t batch_size = 0;
  int64_t accumulate = 1;
  GpuDataSpec data;             // the dataset, an epoch's samples on one rank and the validation set
  int64_t max_epoch_steps = 0;  // the optimizer steps of the longest epoch
  // More than one rank: this rank's GPU (an index among its host's visible ones),
  // its place in the world (its validation samples are rank, rank + world, ...) and, through
  // host memory, the ranks' average of a step's gradients, in place.
  int device = 0;
  int world = 1, rank = 0;
  std::function<void(std::span<float>)> reduce_gradients{};
  // ZeRO-1 (GpuStepConfig's): this rank's range of the parameters, their all-gather through
  // host memory, or every rank's range's size for NCCL's.
  int64_t update_begin = 0, update_count = -1;
  std::function<void(std::span<float>)> gather_params{};
  std::vector<int> shard_counts{};
  // Or NCCL (a GPU per rank, or a world of one that asked for it): the communicator's id from
  // rank 0, the buckets (dist/bucket_plan.h's) and the bound on a wait for the device.
  std::optional<NcclId> nccl_id{};
  std::vector<GradBucket> buckets{};
  double nccl_timeout_s = 0;
};

class GpuTraining {
 public:
  // Uploads params and the optimizer's state (a fresh one's zeros, or a resumed one's).
  GpuTraining(const GpuTrainingSpec& spec, std::span<const float> params, Optimizer& optimizer);
  GpuTraining(const GpuTraining&) = delete;
  GpuTraining& operator=(const GpuTraining&) = delete;
  ~GpuTraining();

  // As GpuTrainStep's: an epoch's order from its first micro-batch not yet trained, then its
  // steps (enqueued only), then each micro-batch's sum of squared errors (waits).
  void start_epoch(int64_t epoch, std::span<const int64_t> order, int64_t steps_before, int64_t steps);
  void step(const std::vector<int64_t>& micro_batch_sizes, bool timed);
  std::vector<double> epoch_sum_squares() const;
  std::optional<DeviceStepMarks> take_timed_step();  // GpuTrainStep's (observe/device_step_phases.h)

  // This rank's share of the validation set's sum of squared errors, in order with epoch's
  // data (waits), and the number of samples in that share.
  double validation_sum_squares(int64_t epoch);
  int64_t validation_samples() const;

  // The device's parameters and optimizer state into the host's (waits).
  void copy_to_host(std::span<float> params, Optimizer& optimizer) const;

  // The GPU's PCI bus id, "0000:3b:00.0": how NVML finds it (its numbering is not CUDA's).
  std::string pci_bus_id() const;

  // GpuTrainStep's: this GPU's measured GEMM rate in the run's precision (after training).
  double gemm_peak_flops();

 private:
  int device_ = 0;
  // nccl_ before step_, which uses it; destroyed after it (and aborted first when unwinding:
  // ~GpuTraining).
  std::unique_ptr<NcclComm> nccl_;
  std::unique_ptr<GpuTrainStep> step_;
};

}  // namespace ddp
