#pragma once
// The seed's training step on one GPU: an MLP with an MSE loss on the random or
// teacher dataset or a CSV file's rows. Per optimizer step: the gradients zeroed; for each of
// its k micro-batches, the samples made on the device from the epoch's order (gpu/gpu_samples.h),
// forward, the fused loss and its gradient (Lightning's loss / k), backward; then the
// optimizer (PyTorch's equations, optim/update_rules.h). With cuda_graph, each step shape
// (its micro-batch sizes) is captured once as a CUDA graph and replayed, one launch per step;
// without, the same kernels are launched one by one (the eager ablation). All memory is
// allocated by the constructor, nothing is copied between host and device inside a step, and
// each micro-batch's loss stays on the device until epoch_sum_squares(). validate() is the
// forward and loss alone over the dataset in order, captured likewise. With more than one
// rank, the ranks average the step's gradients. Over NCCL the average is part of
// the step (dist/gpu_step_schedule.h's order): in the last micro-batch's backward, each
// bucket's allreduce starts on a stream of its own once its layers' gradients are done, and
// the optimizer waits for the last one; the graph holds all of it. ZeRO-1 over NCCL reduces
// each rank's range to it after backward and gathers the parameters after the optimizer.
// Through host memory (ranks sharing a GPU) a step runs in two parts around the ranks'
// average, made on the host: the zeroing, micro-batches and backward (captured likewise),
// then the gradients copied out and back, then the optimizer.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "ddpscope/layer_layout.h"
#include "ddpscope/optimizer.h"
#include "dist/bucket_plan.h"
#include "dist/gpu_step_schedule.h"
#include "gpu/cuda_event.h"
#include "gpu/cuda_graph.h"
#include "gpu/cuda_stream.h"
#include "gpu/device_array.h"
#include "gpu/gpu_samples.h"
#include "gpu/gpu_step_spec.h"
#include "gpu/lt_gemm.h"
#include "gpu/mapped_counter.h"
#include "gpu/mlp_gpu.h"
#include "gpu/nccl_comm.h"
#include "gpu/step_cursor.h"
#include "gpu/step_timer.h"
#include "optim/update_rules.h"

namespace ddp {

struct GpuLossTotals {
  double sum_squares = 0;  // of every (pred - target) of the pass
  bool nonfinite = false;  // a difference was NaN or infinite
};

class GpuTrainStep {
 public:
  // Uploads params (the MLP's flat buffer, layer_layout's order); the optimizer's state
  // starts at zero, as a fresh torch.optim's.
  // nccl: the ranks' communicator (not owned) where spec.nccl_id asked for one.
  GpuTrainStep(const GpuStepSpec& spec, std::span<const float> params, NcclComm* nccl = nullptr);
  // Uploads a resumed optimizer's state, in optimizer_state()'s order (synchronises).
  void load_optimizer_state(const std::vector<std::span<const float>>& state);
  GpuTrainStep(const GpuTrainStep&) = delete;
  GpuTrainStep& operator=(const GpuTrainStep&) = delete;

  // Before an epoch's first step (synchronises): its samples in the order they are taken
  // (this rank's, from its first micro-batch not yet trained), and the optimizer steps taken
  // before it, from which Adam's bias corrections count.
  void start_epoch(int64_t epoch, std::span<const int64_t> order, int64_t steps_before, int64_t steps_in_epoch);

  // One optimizer step over the epoch's next micro-batches, of these sizes (accumulate of
  // them, or fewer on the epoch's last step; each at most batch_size). Enqueues only; the
  // sizes are the key of the step's graph, so a vector: nothing is copied per step.
  // timed: with CUDA events between its pieces, unless a timed step is still unread, or the
  // step would not show the steady state (the run's first step; with graphs, an eager run).
  void step(const std::vector<int64_t>& micro_batch_sizes, bool timed = false);

  // The last timed step's marks, once (waits for the device); none when no step was timed
  // since the last call. A timed step not taken before the next start_epoch is dropped.
  std::optional<DeviceStepMarks> take_timed_step();

  // Destroys the graphs that hold NCCL's work (the step's): before the communicator is aborted,
  // which from NCCL 2.26 waits until no graph holds it.
  void release_graphs();

  // Waits for the device; the sum of (pred - target)^2 of each micro-batch the epoch has
  // taken since start_epoch, in order. A non-finite difference makes its sum non-finite.
  std::vector<double> epoch_sum_squares();

  // The validation pass (synchronises): forward and loss over this rank's first `samples`
  // validation samples in order, batch_size at a time, with epoch's data, as the host's validation reads the
  // dataset. Run eagerly the first time for a size, then as one captured graph.
  GpuLossTotals validate(int64_t epoch, int64_t samples);

  // Copies from the device (synchronise): the parameters, and the optimizer's state buffers
  // (Adam: exp_avg, exp_avg_sq; SGD with momentum: momentum_buffer; plain SGD: none).
  std::vector<float> params();
  std::vector<std::vector<float>> optimizer_state();

  // This GPU's rate on a large square GEMM in the run's precision, FLOP/s, the best of a few
  // (synchronises; allocates, so after training): the denominator of the run's model-FLOP
  // share, as the CPU's is its core's measured peak.
  double gemm_peak_flops();

  int64_t validation_samples() const { return validation_samples_; }  // this rank's
  int64_t graphs_captured() const { return step_graphs_.captured() + gradient_graphs_.captured(); }

 private:
  void enqueue_step(const std::vector<int64_t>& sizes, const StepTimer* timer);
  // A step's parts: the gradients of its micro-batches (from zero), then the update.
  void enqueue_gradients(const std::vector<int64_t>& sizes, const StepTimer* timer, std::size_t& next_mark);
  void enqueue_update(int64_t micro_batches);
  void enqueue_optimizer();
  void step_through_host(const std::vector<int64_t>& sizes);
  void enqueue_validation(int64_t samples);
  // In the last micro-batch's backward: after layer's gradients, the allreduces the plan puts
  // there (dist/gpu_step_schedule.h), each on comm_stream_ once that layer is done.
  void start_bucket_allreduces(int64_t layer);
  // Waits for the device (through NCCL's poll when it averages, which times the absence of
  // progress: the steps the device finished; on its failure, the graphs holding NCCL's work
  // are destroyed before the communicator is aborted).
  void wait();
  bool sharded_over_nccl() const { return nccl_ != nullptr && !spec_.shard_counts.empty(); }

  GpuStepSpec spec_;
  NcclComm* nccl_;
  std::vector<LinearLayout> layers_;
  int64_t num_params_;
  int64_t update_begin_, update_count_;  // the parameters this rank's optimizer updates
  CudaStream stream_;
  LtGemm lt_;
  DeviceArray<float> params_, grads_, state0_, state1_;
  GpuActivationMemory activations_;
  GpuSamples samples_;
  DeviceArray<float> x_, y_;
  DeviceArray<int64_t> order_;
  DeviceArray<StepCursor> cursor_;
  MappedCounter steps_done_;  // written by the device at each step's end
  DeviceArray<AdamScalars> adam_table_;
  DeviceArray<SgdScalars> sgd_table_;
  DeviceArray<double> sum_squares_;  // one per micro-batch of the epoch
  // Validation's own: this rank's samples in order, its cursor and sums, its graphs by size.
  DeviceArray<int64_t> in_order_;
  DeviceArray<StepCursor> val_cursor_;
  DeviceArray<double> val_sum_squares_;
  DeviceArray<int> val_nonfinite_;
  GraphsByShape<int64_t> val_graphs_;
  int64_t validation_samples_ = 0;
  // The host's view of the cursor, to refuse a step past the epoch's order or tables.
  int64_t order_size_ = 0, steps_in_epoch_ = 0, micro_batches_taken_ = 0, steps_taken_ = 0;
  GraphsByShape<std::vector<int64_t>> step_graphs_;
  // The host-memory transport's: the gradients part's graphs, and the gradients on the host.
  GraphsByShape<std::vector<int64_t>> gradient_graphs_;
  std::vector<float> host_grads_, host_params_;
  // NCCL's: the buckets each layer's backward completes (allreduces_after_layer), the stream
  // their allreduces run on, an event per bucket (its layers are done) and one for the last
  // allreduce's end.
  std::vector<std::vector<int64_t>> allreduces_after_layer_;
  CudaStream comm_stream_;
  std::vector<CudaEvent> bucket_done_;
  CudaEvent allreduces_done_;
  // Timed steps: their own graphs (with the events as nodes), the marks of one not yet read.
  StepTimer timer_;
  GraphsByShape<std::vector<int64_t>> timed_graphs_;
  int64_t steps_run_ = 0;
  std::size_t timed_marks_ = 0;  // of the step timed and not taken yet; 0: none
};

}  // namespace ddp
