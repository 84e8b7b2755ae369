#pragma once
// What a GPU rank trains and how, as the Trainer asks for it: the one description of a GPU
// step (gpu/train_step_gpu.h runs it; gpu/gpu_training.h joins the ranks around it). Free of
// CUDA's types, so the Trainer builds alike with and without CUDA.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "ddpscope/layer_layout.h"
#include "ddpscope/optimizer.h"
#include "ddpscope/option_enums.h"
#include "dist/bucket_plan.h"
#include "gpu/gpu_data_spec.h"
#include "gpu/nccl_comm.h"

namespace ddp {

struct GpuStepSpec {
  MlpShape shape;
  OptimizerConfig optimizer;
  Precision precision = Precision::k32True;
  int64_t batch_size = 0;       // samples per micro-batch (an epoch's last may have fewer)
  int64_t accumulate = 1;       // micro-batches per optimizer step (accumulate_grad_batches)
  GpuDataSpec data;             // the samples; its size: the longest order an epoch is given
  int64_t max_epoch_steps = 0;  // the most optimizer steps an epoch takes
  bool cuda_graph = true;
  // More than one rank: this rank's GPU (an index among its host's visible ones) and its place
  // in the world (its validation samples are rank, rank + world, ... below data.size).
  int device = 0;
  int world = 1, rank = 0;
  // Through host memory: averages a step's gradients over the ranks, in place (the ranks'
  // allreduce over MPI).
  std::function<void(std::span<float>)> reduce_gradients{};
  // Or over NCCL (a GPU per rank, or a world of one that asked for it): the communicator's id
  // from rank 0, the buckets its allreduces take (plan_buckets's: backward's order), and the
  // bound on a wait for the device without progress.
  std::optional<NcclId> nccl_id{};
  std::vector<GradBucket> buckets{};
  double nccl_timeout_s = 0;
  // ZeRO-1 (--strategy ddp_zero1): the optimizer updates only this rank's parameters
  // [update_begin, update_begin + update_count), with state of that size, after the ranks'
  // reduce-scatter left their mean gradient there; then the others' ranges are gathered into
  // the whole parameters. Through host memory, reduce_gradients and gather_params are those
  // two; over NCCL, its reduce_scatter_mean and allgather_ranges over shard_counts (every
  // rank's range's size). update_count -1: every parameter, no gather.
  int64_t update_begin = 0, update_count = -1;
  std::function<void(std::span<float>)> gather_params{};
  std::vector<int> shard_counts{};
};

}  // namespace ddp
