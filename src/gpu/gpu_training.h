#pragma once
// The Trainer's GPU: the seed's step on one device (gpu/train_step_gpu.h) behind a
// header without CUDA's types, so that the Trainer builds alike with and without CUDA. The
// host keeps its Mlp and Optimizer as the checkpoints' copy: they are uploaded once and read
// back only where the Trainer writes them (checkpoints, the run's end). A build without CUDA
// has nothing to construct: check_accelerator refuses such a run before it starts.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ddpscope/optimizer.h"
#include "gpu/gpu_step_spec.h"
#include "gpu/nccl_comm.h"
#include "observe/device_step_phases.h"

namespace ddp {

class GpuTrainStep;

class GpuTraining {
 public:
  // Uploads params and the optimizer's state (a fresh one's zeros, or a resumed one's).
  GpuTraining(const GpuStepSpec& spec, std::span<const float> params, Optimizer& optimizer);
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
