#include "train/records/trace_size.h"

#include <gtest/gtest.h>

#include "ddpscope/config.h"
#include "observe/span_buffer.h"
#include "train/config/memory_check.h"
#include "train/config/run_config.h"

namespace ddp {
namespace {

// The seed: 5000 samples over 3 ranks, batch 256, 7 micro-batches per epoch, 200 epochs.
TEST(TraceSize, TheSeedsRunIsSizedFromItsPlan) {
  const EpochPlan plan = plan_epoch(samples_per_rank(5000, 3), 256, {}, 1);
  const TraceSize size = trace_size(plan, 200, 2);
  EXPECT_EQ(size.step_spans, 200 * (7 * (8 + 2) + 16) + 64);
  EXPECT_EQ(size.fill_spans, 200 * 7 + 16);
}

TEST(TraceSize, ALongOrEndlessRunIsCapped) {
  const EpochPlan plan = plan_epoch(1'000'000, 1, {}, 1);
  EXPECT_EQ(trace_size(plan, 1000, 1).step_spans, kMaxTraceSpans);
  EXPECT_EQ(trace_size(plan, 1000, 1).fill_spans, kMaxTraceSpans);
  EXPECT_EQ(trace_size(plan, -1, 1).step_spans, kMaxTraceSpans);
}

// The up-front memory check counts the trace's buffers and copies, and only with --profiler trace.
TEST(TraceSize, TheMemoryCheckCountsTheTraceOfALongRun) {
  Config config;
  config.data.dataset_size = 1'000'000;
  config.data.batch_size = 1;
  config.trainer.max_epochs = 1000;
  EXPECT_EQ(memory_need(config).trace, 0);
  config.trainer.profiler = Profiler::kTrace;
  EXPECT_DOUBLE_EQ(memory_need(config).trace, 4.0 * 2 * kMaxTraceSpans * sizeof(Span));
  config.trainer.max_epochs = -1;
  EXPECT_DOUBLE_EQ(memory_need(config).trace, 4.0 * 2 * kMaxTraceSpans * sizeof(Span));
}

}  // namespace
}  // namespace ddp
