#pragma once
// The order of one optimizer step's work on a GPU rank, as data: which stream
// runs each piece, and the events that order one stream after the other. The GPU engine
// issues these in this order while it captures the step's CUDA graph(s); the tests check
// the orderings that make it correct (a bucket is reduced only after every one of its
// layers' gradients, the optimizer only after every bucket) and the ones that make it fast
// (a bucket waits for nothing but its own layers, so its allreduce overlaps the backward of
// the layers before it; accumulating micro-batches communicate nothing, Lightning's no_sync).
//
// With NCCL (GradTransport::kNccl), k micro-batches, and buckets as plan_buckets makes them:
//   compute: fwd(m) loss(m) bwd(m, L-1) .. bwd(m, 0)   for m = 0 .. k-1; in the last one,
//            record e_b right after bwd(k-1, first_layer of bucket b)
//   comm:    wait e_b, allreduce(b)                     for b = 0, 1, ... (backward's order)
//            record e_done
//   compute: wait e_done, optimizer
// The comm stream forks from compute and joins it again (e_done) inside the step, which is
// what stream capture requires, so the whole step is one graph: one launch per step.
//
// With kNone (one rank) nothing is communicated. kHostMpi (ranks sharing a GPU: NCCL refuses)
// is no plan: an MPI call on the host fits in no graph, so the engine steps through the host
// as a whole (GpuTrainStep::step_through_host: the gradient copied out once, averaged, copied
// back).
#include <cstdint>
#include <vector>

#include "dist/bucket_plan.h"
#include "dist/gpu_placement.h"

namespace ddp {

enum class StepStream { kCompute, kComm };

enum class StepWork { kForward, kLoss, kBackward, kRecord, kWait, kAllreduce, kOptimizer };

struct StepOp {
  StepStream stream = StepStream::kCompute;
  StepWork work = StepWork::kForward;
  int64_t micro_batch = -1;  // kForward, kLoss, kBackward
  int64_t layer = -1;        // kBackward
  int64_t bucket = -1;       // kAllreduce, the copies
  int event = -1;            // kRecord, kWait: the event recorded or waited for
};

// Requires at least one micro-batch, a transport of kNone or kNccl and, for NCCL, buckets
// covering layers 0..num_layers-1 in backward order (plan_buckets).
std::vector<StepOp> plan_gpu_step(const std::vector<GradBucket>& buckets, int64_t num_layers, int64_t micro_batches,
                                  GradTransport transport);

// What the GPU engine issues from a NCCL plan: for each layer, the buckets whose allreduce
// starts right after that layer's backward in the last micro-batch (backward's order).
std::vector<std::vector<int64_t>> allreduces_after_layer(const std::vector<StepOp>& ops, int64_t num_layers);

}  // namespace ddp
