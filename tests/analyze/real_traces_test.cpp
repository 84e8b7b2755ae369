// Real traces of other people's GPU and gloo jobs (fixtures/README.md): each read, its steps
// found, its NCCL or gloo work classified as communication, its parts adding up to the step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "doctor/prediction_band.h"

#include <numeric>

#include "analyze/trace_analysis.h"

namespace ddp {
namespace {

std::string fixture(const std::string& name) {
  return std::string(DDPSCOPE_SOURCE_DIR) + "/tests/analyze/fixtures/" + name;
}

TraceAnalysis analyze(const std::string& name) { return analyze_job(read_job(trace_files({fixture(name)}), {})); }

void expect_parts_add_up(const TraceJob& job) {
  for (const TracedRank& r : job.ranks) {
    for (const TraceStep& s : r.steps.steps) {
      EXPECT_EQ(std::accumulate(s.part_ns.begin(), s.part_ns.end(), int64_t{0}), s.duration_ns);
    }
  }
}

bool has_note(const TraceAnalysis& a, const std::string& start) {
  return std::any_of(a.notes.begin(), a.notes.end(), [&](const std::string& n) { return n.starts_with(start); });
}

double part_ms(const TraceAnalysis& a, StepPart p) { return a.ranks[0].part_ms[static_cast<std::size_t>(p)]; }

TEST(RealTraces, ATwoGpuNcclJobsRankZero) {
  const TraceAnalysis a = analyze("nccl_parser_config_nccl_data.json.gz");
  EXPECT_EQ(a.job.world_size, 2);
  EXPECT_EQ(a.job.backend, "nccl");
  ASSERT_EQ(a.ranks.size(), 1u);
  EXPECT_EQ(a.ranks[0].rank, 0);
  const RankSteps& s = a.job.ranks[0].steps;
  EXPECT_TRUE(s.on_gpu);
  EXPECT_EQ(s.step_source, "ProfilerStep#N");
  EXPECT_EQ(s.steps.size(), 2u);  // ProfilerStep#4 dropped as warm-up
  EXPECT_EQ(s.steps[0].number, 5);
  expect_parts_add_up(a.job);
  // NCCL's kernels (classified by their collective metadata) partly exposed; the GPU mostly idle
  // while the host launches (measured with Python over the same file: busy 50 of 220 ms).
  EXPECT_FALSE(s.collectives.empty());
  for (const CollectiveCall& c : s.collectives) EXPECT_GT(c.bytes, 0);
  EXPECT_GT(part_ms(a, StepPart::kCommWait), 5);
  EXPECT_GT(part_ms(a, StepPart::kForward), 5);
  EXPECT_GT(part_ms(a, StepPart::kBackward), 5);
  EXPECT_GT(part_ms(a, StepPart::kLaunch), 0.5 * a.ranks[0].step_ms);
  ASSERT_FALSE(a.findings.empty());
  EXPECT_EQ(a.findings[0].title.substr(0, 39), "The GPU waits for its host to launch wo");
  EXPECT_EQ(a.notes[0], "1 of the job's 2 ranks have traces here (rank 0): the others are not analysed");
  // Each NCCL kernel traced to its launch by correlation: DDP's 5 buckets per step launched
  // from the autograd thread's backward, in one synchronisation after the step's one forward.
  const RankSyncs& syncs = a.ranks[0].syncs;
  EXPECT_EQ(syncs.forward_passes, 1);
  EXPECT_EQ(syncs.gradient_calls, 5);
  EXPECT_EQ(syncs.gradient_syncs, 1);
  for (const Finding& f : a.findings) EXPECT_EQ(f.title.find("accumulation"), std::string::npos) << f.title;
  // What no trace holds is said, not left to silence: start-up (a GPU job's threads matter not).
  EXPECT_TRUE(has_note(a, "start-up not judged"));
  EXPECT_FALSE(has_note(a, "thread oversubscription not judged"));
}

TEST(RealTraces, Rank34OfA300RankGlooJob) {
  const TraceAnalysis a = analyze("cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz");
  EXPECT_EQ(a.job.world_size, 300);
  EXPECT_EQ(a.job.backend, "gloo");
  EXPECT_EQ(a.ranks[0].rank, 34);
  const RankSteps& s = a.job.ranks[0].steps;
  EXPECT_FALSE(s.on_gpu);
  ASSERT_EQ(s.steps.size(), 1u);
  expect_parts_add_up(a.job);
  // Its one step waits on the two gloo allreduces that start in it, run by other threads.
  EXPECT_EQ(s.collectives.size(), 2u);
  EXPECT_GT(part_ms(a, StepPart::kCommWait), 0.5 * a.ranks[0].step_ms);
  EXPECT_TRUE(has_note(a, "thread oversubscription not judged: a trace records neither the threads"));
  EXPECT_TRUE(has_note(a, "start-up not judged"));
}

TEST(RealTraces, AnAmdTraceWithoutRankIsTheJobsOnlyRank) {
  const TraceAnalysis a = analyze("amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz");
  EXPECT_EQ(a.job.world_size, 1);
  ASSERT_EQ(a.job.ranks[0].steps.steps.size(), 1u);  // the second, 49 us, cut by the profile's end
  EXPECT_EQ(a.job.ranks[0].steps.dropped_partial, 1);
  EXPECT_TRUE(a.job.ranks[0].steps.on_gpu);
  expect_parts_add_up(a.job);
  EXPECT_FALSE(a.collectives.has_value());
}

TEST(RealTraces, ModernKinetoFromATorch2GlooJobWithARankSlowedInForward) {
  const TraceAnalysis a = analyze("torch2_gloo_slow_forward");
  ASSERT_EQ(a.ranks.size(), 2u);
  EXPECT_EQ(a.job.backend, "gloo");
  expect_parts_add_up(a.job);
  ASSERT_TRUE(a.straggler_part.has_value());
  EXPECT_EQ(a.collectives->straggler->rank, 1);
  EXPECT_EQ(a.straggler_part->part, StepPart::kForward);
  EXPECT_NEAR(a.straggler_part->excess_ms_per_step, 20, 5);
  // record_shapes gives the allreduce's size: the seed's 134,657 parameters in float32.
  ASSERT_TRUE(a.prediction.has_value());
  ASSERT_EQ(a.prediction->bytes_per_step.size(), 1u);
  EXPECT_EQ(a.prediction->bytes_per_step[0], 134657 * 4);
  // Every prediction carries a band: at least the traced steps' spread at the traced 2 devices,
  // wider the further it lies from them.
  for (const TracePredictionRow& r : a.prediction->rows) {
    if (r.link != "measured") continue;
    const double spread =
        std::max(a.ranks[0].step_ms_stddev / a.ranks[0].step_ms, a.ranks[1].step_ms_stddev / a.ranks[1].step_ms);
    const double at_two = std::max(spread, kBandFloor);
    if (r.devices == 2) EXPECT_DOUBLE_EQ(r.band, at_two);
    if (r.devices == 8) EXPECT_NEAR(r.band, at_two + kBandPerEFold * std::log(4.0), 1e-12);
  }
}

TEST(RealTraces, LightningsProfilerFilesOfATwoRankDdpJob) {
  const TraceAnalysis a = analyze("lightning_ddp_gloo");
  ASSERT_EQ(a.ranks.size(), 2u);
  EXPECT_EQ(a.ranks[1].rank, 1);  // from distributedInfo: Lightning's names carry the local rank only
  expect_parts_add_up(a.job);
  for (const RankBreakdown& b : a.ranks) {
    EXPECT_EQ(b.steps, 3);
    // Lightning's training_step (inside its optimizer_step's closure) is forward.
    for (StepPart p : {StepPart::kData, StepPart::kForward, StepPart::kBackward, StepPart::kOptimizer}) {
      EXPECT_GT(b.part_ms[static_cast<std::size_t>(p)], 0.1) << kStepPartNames[static_cast<std::size_t>(p)];
    }
  }
  EXPECT_GT(a.collectives->matched, 0);
  // Per step: DDP's allreduce, launched inside backward, and Lightning's own broadcast after the
  // batch (its SIGTERM check), launched outside it.
  for (const RankBreakdown& b : a.ranks) {
    EXPECT_EQ(b.syncs.gradient_calls, 1);
    EXPECT_EQ(b.syncs.other_calls, 1);
    EXPECT_EQ(b.syncs.other_name, "gloo:broadcast");
  }
  // Its ranks were blocked on communication about 1.3 ms per step while gloo's threads also
  // waited for each other under backward: that waiting is no reason to price the transfer as
  // hidden. The blocked share of the collectives' time in flight is what the what-if prices.
  ASSERT_TRUE(a.prediction.has_value()) << a.no_prediction;
  double comm_wait = 0, waits = 0, transfer = 0;
  for (const RankBreakdown& b : a.ranks) comm_wait += b.part_ms[static_cast<std::size_t>(StepPart::kCommWait)] / 2;
  for (double ms : a.collectives->wait_ms_per_step) waits += ms / 2;
  for (double ms : a.collectives->transfer_ms_per_step) transfer += ms / 2;
  EXPECT_GT(comm_wait, 0.5);
  EXPECT_NEAR(a.prediction->exposed_share, comm_wait / (transfer + waits), 1e-9);
  EXPECT_GT(a.prediction->exposed_share, 0.2);
}

// One training traced at 1, 2 and 3 devices (fixtures/README.md). Fitted from the 1- and
// 2-rank jobs, the 3-device step is predicted within its band of what the 3-rank job took.
// These traces were made on 2 cores, where the compute per step of the same job varies up to
// 2x from run to run (docs/scaling-guide.md): the fit inherits it, and the band must hold it.
TEST(RealTraces, AWhatIfFittedFromOneAndTwoRanksPredictsTheThreeRankJobWithinItsBand) {
  const TraceAnalysis fitted =
      analyze_job(read_job(trace_files({fixture("scaling_2")}), {}), {traced_scale(analyze("scaling_1"))});
  ASSERT_TRUE(fitted.prediction.has_value()) << fitted.no_prediction;
  const TracePrediction& p = *fitted.prediction;
  EXPECT_EQ(p.fitted_devices, (std::vector<int>{1, 2}));
  EXPECT_GE(p.contention, 0);
  const TraceAnalysis three = analyze("scaling_3");
  double measured_ms = 0;
  for (const RankBreakdown& b : three.ranks) measured_ms += b.step_ms / static_cast<double>(three.ranks.size());
  const auto row = std::find_if(p.rows.begin(), p.rows.end(),
                                [](const TracePredictionRow& r) { return r.devices == 3 && r.link == "measured"; });
  ASSERT_NE(row, p.rows.end());
  EXPECT_LT(std::abs(row->step_ms - measured_ms), row->band * row->step_ms)
      << row->step_ms << " ms predicted ± " << 100 * row->band << " %, " << measured_ms << " ms measured";
  // Ranks that keep their per-device batch: the step grows with the devices, never shrinks.
  for (std::size_t i = 1; i < p.rows.size(); ++i) {
    if (p.rows[i].link == p.rows[i - 1].link) EXPECT_GE(p.rows[i].step_ms, p.rows[i - 1].step_ms);
  }
}

}  // namespace
}  // namespace ddp
