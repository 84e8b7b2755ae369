#include "dist/gpu_step_schedule.h"

#include "base/check.h"
#include "ddpscope/error.h"

namespace ddp {
namespace {

StepOp compute(StepWork work, int64_t micro_batch, int64_t layer = -1) {
  return {.stream = StepStream::kCompute, .work = work, .micro_batch = micro_batch, .layer = layer};
}

StepOp on(StepStream stream, StepWork work, int64_t bucket, int event = -1) {
  return {.stream = stream, .work = work, .bucket = bucket, .event = event};
}

}  // namespace

std::vector<StepOp> plan_gpu_step(const std::vector<GradBucket>& buckets, int64_t num_layers, int64_t micro_batches,
                                  GradTransport transport) {
  DDP_CHECK_GE(micro_batches, int64_t{1});
  DDP_CHECK(transport != GradTransport::kHostMpi, "a step through the host is not planned");
  if (transport == GradTransport::kNccl) {
    DDP_CHECK(!buckets.empty() && buckets.front().last_layer == num_layers - 1 && buckets.back().first_layer == 0,
              "buckets must cover every layer, in backward order");
  }
  const int done_event = static_cast<int>(buckets.size());  // events 0..B-1: bucket b's layers are done
  std::vector<StepOp> ops;
  for (int64_t m = 0; m < micro_batches; ++m) {
    ops.push_back(compute(StepWork::kForward, m));
    ops.push_back(compute(StepWork::kLoss, m));
    const bool syncs = m + 1 == micro_batches;
    std::size_t bucket = 0;
    for (int64_t layer = num_layers - 1; layer >= 0; --layer) {
      ops.push_back(compute(StepWork::kBackward, m, layer));
      if (!syncs || transport != GradTransport::kNccl) continue;
      if (layer == buckets[bucket].first_layer) {
        const int event = static_cast<int>(bucket);
        ops.push_back(on(StepStream::kCompute, StepWork::kRecord, -1, event));
        ops.push_back(on(StepStream::kComm, StepWork::kWait, -1, event));
        ops.push_back(on(StepStream::kComm, StepWork::kAllreduce, static_cast<int64_t>(bucket)));
        ++bucket;
      }
    }
  }
  if (transport == GradTransport::kNccl) {
    ops.push_back(on(StepStream::kComm, StepWork::kRecord, -1, done_event));
    ops.push_back(on(StepStream::kCompute, StepWork::kWait, -1, done_event));
  }
  ops.push_back(compute(StepWork::kOptimizer, -1));
  return ops;
}

std::vector<std::vector<int64_t>> allreduces_after_layer(const std::vector<StepOp>& ops, int64_t num_layers) {
  std::vector<std::vector<int64_t>> after(static_cast<std::size_t>(num_layers));
  int64_t last_layer = -1;  // the latest backward's
  for (const StepOp& op : ops) {
    if (op.work == StepWork::kBackward) last_layer = op.layer;
    if (op.work == StepWork::kAllreduce && op.stream == StepStream::kComm) {
      after[static_cast<std::size_t>(last_layer)].push_back(op.bucket);
    }
  }
  return after;
}

}  // namespace ddp
