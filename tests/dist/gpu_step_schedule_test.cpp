// The GPU step's order of work, checked as CUDA would run it: ops on one stream in issue
// order, and a wait orders its stream after everything before the event's record.
#include "dist/gpu_step_schedule.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <functional>
#include <map>
#include <vector>

#include "ddpscope/mlp.h"

namespace ddp {
namespace {

// before[i][j]: op j has finished whenever op i starts.
using Order = std::vector<std::vector<bool>>;

Order happens_before(const std::vector<StepOp>& ops) {
  const std::size_t n = ops.size();
  using Set = std::vector<bool>;
  auto merge = [](Set& into, const Set& from) {
    for (std::size_t j = 0; j < from.size(); ++j) into[j] = into[j] || from[j];
  };
  std::map<StepStream, Set> stream_done;  // what has finished before the stream's next op
  std::map<int, Set> event_done;          // what has finished once an event fires
  Order before(n);
  for (std::size_t i = 0; i < n; ++i) {
    const StepOp& op = ops[i];
    Set& done = stream_done.try_emplace(op.stream, Set(n, false)).first->second;
    if (op.work == StepWork::kWait) merge(done, event_done.at(op.event));
    before[i] = done;
    done[i] = true;  // the stream's next op starts after this one
    if (op.work == StepWork::kRecord) event_done[op.event] = done;
  }
  return before;
}

std::size_t index_of(const std::vector<StepOp>& ops, const std::function<bool(const StepOp&)>& is) {
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (is(ops[i])) return i;
  }
  ADD_FAILURE() << "no such op";
  return 0;
}

std::size_t backward(const std::vector<StepOp>& ops, int64_t micro_batch, int64_t layer) {
  return index_of(ops, [&](const StepOp& op) {
    return op.work == StepWork::kBackward && op.micro_batch == micro_batch && op.layer == layer;
  });
}

std::size_t work(const std::vector<StepOp>& ops, StepWork kind, int64_t bucket = -1) {
  return index_of(ops, [&](const StepOp& op) { return op.work == kind && op.bucket == bucket; });
}

std::size_t count(const std::vector<StepOp>& ops, StepWork kind) {
  std::size_t c = 0;
  for (const StepOp& op : ops) c += op.work == kind;
  return c;
}

// Five layers, 10 -> 64 -> 64 -> 64 -> 64 -> 1, in three buckets at a 20,000-byte cap:
// {4}+{3} (65 + 4160 floats), {2}, {1}+{0} (4160 + 704).
struct FiveLayers {
  Mlp model{MlpShape{.input_dim = 10, .hidden_size = 64, .hidden_layers = 4, .output_dim = 1}};
  std::vector<GradBucket> buckets = plan_buckets(model.layers(), 20000, 20000);
  int64_t layers = model.shape().num_layers();
};

TEST(GpuStepSchedule, NcclReducesEachBucketAfterItsOwnLayersOnlySoItOverlapsTheRestOfBackward) {
  const FiveLayers s;
  ASSERT_EQ(s.buckets.size(), 3u);
  const int64_t k = 3;
  const auto ops = plan_gpu_step(s.buckets, s.layers, k, GradTransport::kNccl);
  const Order before = happens_before(ops);
  for (std::size_t b = 0; b < s.buckets.size(); ++b) {
    const std::size_t reduce = work(ops, StepWork::kAllreduce, static_cast<int64_t>(b));
    EXPECT_EQ(ops[reduce].stream, StepStream::kComm);
    for (int64_t l = 0; l < s.layers; ++l) {
      const bool own = l >= s.buckets[b].first_layer;  // its layers and those backward did before
      EXPECT_EQ(before[reduce][backward(ops, k - 1, l)], own) << "bucket " << b << ", layer " << l;
      EXPECT_TRUE(before[reduce][backward(ops, k - 2, l)]);  // accumulated gradients are in it
    }
    if (b > 0) EXPECT_TRUE(before[reduce][work(ops, StepWork::kAllreduce, static_cast<int64_t>(b - 1))]);
  }
  EXPECT_EQ(count(ops, StepWork::kAllreduce), s.buckets.size());  // each once, none in no_sync micro-batches
  const std::size_t step = work(ops, StepWork::kOptimizer);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (i != step) EXPECT_TRUE(before[step][i]) << "op " << i << " may still run during the optimizer";
  }
}

// What the engine issues from the plan (GpuTrainStep's per-layer callback): each bucket's
// allreduce right after its first layer's backward, none after the others, and one bucket
// per layer when the cap is below every layer.
TEST(GpuStepSchedule, TheEngineStartsEachBucketAfterItsFirstLayersBackward) {
  const FiveLayers s;
  const auto after = allreduces_after_layer(plan_gpu_step(s.buckets, s.layers, 2, GradTransport::kNccl), s.layers);
  EXPECT_EQ(after, (std::vector<std::vector<int64_t>>{{2}, {}, {1}, {0}, {}}));
  const auto per_layer = plan_buckets(s.model.layers(), 4, 4);
  EXPECT_EQ(allreduces_after_layer(plan_gpu_step(per_layer, s.layers, 1, GradTransport::kNccl), s.layers),
            (std::vector<std::vector<int64_t>>{{4}, {3}, {2}, {1}, {0}}));
  EXPECT_EQ(allreduces_after_layer(plan_gpu_step({}, s.layers, 1, GradTransport::kNone), s.layers),
            std::vector<std::vector<int64_t>>(5));
}

TEST(GpuStepSchedule, EveryRecordedEventIsWaitedForOnTheOtherStreamSoCaptureJoins) {
  const FiveLayers s;
  const auto ops = plan_gpu_step(s.buckets, s.layers, 2, GradTransport::kNccl);
  std::map<int, StepStream> recorded;
  std::map<int, int> waits;
  for (const StepOp& op : ops) {
    if (op.work == StepWork::kRecord) recorded[op.event] = op.stream;
    if (op.work == StepWork::kWait) {
      ASSERT_TRUE(recorded.count(op.event)) << "event " << op.event << " waited for before it is recorded";
      EXPECT_NE(recorded[op.event], op.stream);
      ++waits[op.event];
    }
  }
  EXPECT_EQ(recorded.size(), s.buckets.size() + 1);
  for (const auto& [event, stream] : recorded) EXPECT_EQ(waits[event], 1) << "event " << event;
  std::size_t last_comm = 0;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].stream == StepStream::kComm) last_comm = i;
  }
  EXPECT_EQ(ops[last_comm].work, StepWork::kRecord);  // the comm stream ends joined to compute
}

TEST(GpuStepSchedule, MicroBatchesRunInOrderOnTheComputeStream) {
  const FiveLayers s;
  const auto ops = plan_gpu_step(s.buckets, s.layers, 3, GradTransport::kNccl);
  const Order before = happens_before(ops);
  for (int64_t m = 1; m < 3; ++m) {
    const std::size_t forward =
        index_of(ops, [&](const StepOp& op) { return op.work == StepWork::kForward && op.micro_batch == m; });
    EXPECT_TRUE(before[forward][backward(ops, m - 1, 0)]);  // gradients accumulate in place
  }
}

TEST(GpuStepSchedule, OneRankCommunicatesNothing) {
  const FiveLayers s;
  const int64_t k = 3;
  const auto ops = plan_gpu_step({}, s.layers, k, GradTransport::kNone);
  for (const StepOp& op : ops) {
    EXPECT_EQ(op.stream, StepStream::kCompute);
    EXPECT_NE(op.work, StepWork::kAllreduce);
  }
  EXPECT_EQ(ops.size(), static_cast<std::size_t>(k * (2 + s.layers) + 1));
}

}  // namespace
}  // namespace ddp
