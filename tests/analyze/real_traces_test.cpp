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
  return std::any_of(a.result.notes.begin(), a.result.notes.end(),
                     [&](const std::string& n) { return n.starts_with(start); });
}

double part_ms(const TraceAnalysis& a, Phase p) { return a.ranks[0].part_ms[static_cast<std::size_t>(p)]; }

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
  EXPECT_GT(part_ms(a, Phase::kCommWait), 5);
  EXPECT_GT(part_ms(a, Phase::kForward), 5);
  EXPECT_GT(part_ms(a, Phase::kBackward), 5);
  EXPECT_GT(part_ms(a, Phase::kLaunch), 0.5 * a.ranks[0].step_ms);
  ASSERT_FALSE(a.result.findings.empty());
  EXPECT_EQ(a.result.findings[0].title.substr(0, 39), "The GPU waits for its host to launch wo");
  EXPECT_EQ(a.result.notes[0], "1 of the job's 2 ranks have traces here: rank 1 is missing and not analysed");
  // Each NCCL kernel traced to its launch by correlation: DDP's 5 buckets per step launched
  // from the autograd thread's backward, in one synchronisation after the step's one forward.
  const RankSyncs& syncs = a.ranks[0].syncs;
  EXPECT_EQ(syncs.forward_passes, 1);
  EXPECT_EQ(syncs.gradient_calls, 5);
  EXPECT_EQ(syncs.gradient_syncs, 1);
  for (const Finding& f : a.result.findings) EXPECT_EQ(f.title.find("accumulation"), std::string::npos) << f.title;
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
  EXPECT_GT(part_ms(a, Phase::kCommWait), 0.5 * a.ranks[0].step_ms);
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
  // The 20 ms sleep sits inside DDP's forward, where no op covers it: Python in the step.
  EXPECT_EQ(a.straggler_part->part, Phase::kPython);
  EXPECT_NEAR(a.straggler_part->excess_ms_per_step, 20, 5);
  // record_shapes gives the allreduce's size: the seed's 134,657 parameters in float32.
  ASSERT_TRUE(a.prediction.has_value());
  EXPECT_EQ(a.prediction->collectives_per_step, 1);
  EXPECT_EQ(a.prediction->bytes_per_step, 134657 * 4);
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

double mean_part_ms(const TraceAnalysis& a, Phase p) {
  double sum = 0;
  for (const RankBreakdown& b : a.ranks) sum += b.part_ms[static_cast<std::size_t>(p)];
  return sum / static_cast<double>(a.ranks.size());
}

// The folder Lightning's PyTorchProfiler writes for a 2-rank DDP job, as it writes it: per rank
// a training_step trace, a validation_step trace and a summary (fit-seed-<rank>.txt). The seed's
// habit stands in every training_step: 5 ms of plain Python (its pynvml probe).
// What ddpscope's own start-up hook wrote for the seed's script under torch 2 and Lightning 2.6:
// a step per optimizer step (3 micro-batches each), its probe's Python named first.
TEST(RealTraces, TheHooksTracesOfTheSeedsLightningScriptUnderTorch2) {
  const TraceAnalysis a = analyze("hook_torch2_lightning_seed");
  ASSERT_EQ(a.ranks.size(), 2u);
  EXPECT_EQ(a.job.backend, "gloo");
  EXPECT_EQ(a.ranks.front().steps, 3);
  EXPECT_EQ(a.job.ranks.front().steps.step_source, "ProfilerStep#N");
  expect_parts_add_up(a.job);
  // Its 4 ms probe in each of the step's micro-batches (about 3), and Lightning's own Python.
  EXPECT_GT(mean_part_ms(a, Phase::kPython), 3 * 4.0);
  ASSERT_FALSE(a.result.findings.empty());
  EXPECT_EQ(a.result.findings[0].title.substr(0, 56), "Plain Python inside the step, outside any framework op: ");
  EXPECT_GT(a.ranks.front().syncs.gradient_calls, 0) << "DDP's allreduce inside backward";
}

TEST(RealTraces, LightningsFolderOfATwoRankDdpJobWithAProbeInTrainingStep) {
  const TraceAnalysis a = analyze("lightning_ddp_gloo");
  ASSERT_EQ(a.ranks.size(), 2u);
  EXPECT_EQ(a.ranks[1].rank, 1);  // from distributedInfo: Lightning's names carry the local rank only
  EXPECT_NE(a.ranks[1].path.find("training_step"), std::string::npos);
  EXPECT_TRUE(has_note(a, "left out, as not training steps: ")) << "the validation traces, said";
  expect_parts_add_up(a.job);
  for (const RankBreakdown& b : a.ranks) {
    EXPECT_EQ(b.steps, 5);
    for (Phase p : {Phase::kData, Phase::kForward, Phase::kBackward, Phase::kOptimizer}) {
      EXPECT_GT(b.part_ms[static_cast<std::size_t>(p)], 0.1) << kPhaseNames[static_cast<std::size_t>(p)];
    }
  }
  // The probe runs inside DDP's forward (Lightning's training_step is called from it): time there
  // that no op covers, beyond the usual gaps between ops, is Python. The same job without the
  // probe spends 0.8-1.3 ms per step in Lightning's own Python between its hooks, so the 5 ms
  // probe reads as 5 ms more than that, within 1.5 ms (the machine's own jitter).
  const TraceAnalysis quiet = analyze("lightning_ddp_gloo_no_probe");
  const double probe_ms = mean_part_ms(a, Phase::kPython) - mean_part_ms(quiet, Phase::kPython);
  EXPECT_NEAR(probe_ms, 5, 1.5);
  EXPECT_LT(mean_part_ms(a, Phase::kForward), 3) << "the probe is not forward";
  ASSERT_FALSE(a.result.findings.empty());
  EXPECT_EQ(a.result.findings[0].title.substr(0, 56), "Plain Python inside the step, outside any framework op: ");
  EXPECT_GT(a.collectives->matched, 0);
  // Per step: DDP's allreduce, launched inside backward, and Lightning's own broadcast after the
  // batch (its SIGTERM check), launched outside it.
  for (const RankBreakdown& b : a.ranks) {
    EXPECT_EQ(b.syncs.gradient_calls, 1);
    EXPECT_EQ(b.syncs.other_calls, 1);
    EXPECT_EQ(b.syncs.other_name, "gloo:broadcast");
  }
  // The what-if's traced point is the step the traces measured: the slowest rank's training
  // thread blocked as long per ms of transfer as it was.
  ASSERT_TRUE(a.prediction.has_value()) << a.no_prediction;
  EXPECT_EQ(a.prediction->collectives_per_step, 2);
}

// Every committed job: the what-if at the traced device count, on the link the traces measured,
// is the step they measured, within its band.
TEST(RealTraces, TheWhatIfMeetsItsOwnTracedPointWithinItsBand) {
  for (const char* name : {"lightning_ddp_gloo", "lightning_ddp_gloo_no_probe", "torch2_gloo_slow_forward",
                           "torch2_profiler_cycles", "scaling_2", "scaling_3"}) {
    const TraceAnalysis a = analyze(name);
    ASSERT_TRUE(a.prediction.has_value()) << name << ": " << a.no_prediction;
    const auto row = std::find_if(
        a.prediction->rows.begin(), a.prediction->rows.end(),
        [&](const TracePredictionRow& r) { return r.devices == a.job.world_size && r.link == "measured"; });
    ASSERT_NE(row, a.prediction->rows.end()) << name;
    double measured = 0;
    for (const RankBreakdown& b : a.ranks) measured += b.step_ms / static_cast<double>(a.ranks.size());
    EXPECT_LT(std::abs(row->step_ms / measured - 1), row->band)
        << name << ": " << row->step_ms << " against " << measured;
  }
}

// torch's tensorboard_trace_handler writes a file per profiling cycle ("<host>_<pid>.<ns>.pt.trace.json"):
// a rank's two cycles are its steps, in time order, and said.
TEST(RealTraces, ARanksProfilingCyclesAreItsStepsInTimeOrder) {
  const TraceAnalysis a = analyze("torch2_profiler_cycles");
  ASSERT_EQ(a.ranks.size(), 2u);
  for (const TracedRank& r : a.job.ranks) {
    EXPECT_EQ(r.steps.steps.size(), 6u);  // 2 cycles of 4 steps, the first of each a warm-up
    for (std::size_t i = 1; i < r.steps.steps.size(); ++i)
      EXPECT_GT(r.steps.steps[i].start_ns, r.steps.steps[i - 1].start_ns);
  }
  EXPECT_TRUE(has_note(a, "rank 0: 2 profiling cycles read as its steps, in time order"));
  EXPECT_EQ(a.collectives->steps, 6);
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
