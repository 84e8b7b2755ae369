#pragma once
// What a job's traces say: where each rank's step time goes, which rank the others wait for
// and in which part it is slower, and the findings. The answer is a doctor's (doctor/
// doctor_result.h) whose run is read from the traces (phases per rank, collective arrivals): the
// straggler rule and its wording, the findings' and notes' text, doctor.json's runs,
// predictions and findings, and report.html are the doctor's own.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analyze/collective_match.h"
#include "analyze/sync_findings.h"
#include "analyze/trace_job.h"
#include "analyze/trace_prediction.h"
#include "doctor/doctor_result.h"

namespace ddp {

// Thresholds of the trace's own findings, as shares of the mean step (docs/scaling-guide.md).
inline constexpr double kPythonMinShare = 0.05;       // plain Python inside the step
inline constexpr double kDataMinShare = 0.10;         // waiting for the loader
inline constexpr double kCommExposedMinShare = 0.10;  // waiting for communication
inline constexpr double kLaunchMinShare = 0.10;       // a GPU idle while its host launches work

struct RankBreakdown {
  int rank = 0;
  std::string path;
  int64_t steps = 0;
  double step_ms = 0;                                // mean
  double step_ms_stddev = 0;                         // step to step
  std::array<double, kPhaseCount> part_ms{};         // mean per step; they add up to step_ms
  std::array<double, kPhaseCount> part_ms_stddev{};  // step to step
  RankSyncs syncs;
};

struct SlowPart {
  Phase part = Phase::kForward;
  double excess_ms_per_step = 0;  // the straggler's mean over the others' slowest
};

// The rank the others wait for, where its trace shows no cause of its own: it is slower in its
// compute (torch ops: forward, backward, the optimizer) or throughout its step. A core shared with
// other processes, a slower core and more work on that rank all look so, and a trace records no
// scheduler statistics to tell them apart: the rank is named, no cause is. (A balanced job on a
// busy machine, load 5 on 2 cores, had one rank slower by 50-60 % in backward and 17-25 % in the
// rest of its step in 4 of 18 traces.)
struct SlowerRank {
  int rank = 0;
  std::vector<SlowPart> parts;  // each part above its noise, largest excess first
};

// A cause in one part slows that part beyond the rest of the step: a straggler's data or Python
// slower, relative to the others', by at least this factor times the rest of its step is that
// cause (an injected one: 10 times the rest or more).
inline constexpr double kOneCauseFactor = 3;

struct TraceAnalysis {
  TraceJob job;
  std::vector<RankBreakdown> ranks;
  std::optional<CollectiveMatch> collectives;  // with two or more ranks
  std::optional<SlowPart> straggler_part;      // where the straggler is slower, when there is one
  std::optional<SlowerRank> slower_rank;       // else, the rank waited for, its cause unknown
  std::optional<TracePrediction> prediction;   // other device counts and links
  std::string no_prediction;                   // why there is none
  // The doctor's answer: the traced job as its run, the findings (by cost, largest first), the
  // notes and the predictions per step; its command is the one that analysed (report.html's
  // "Reproduce").
  DoctorResult result;
  const RunRecord& record() const { return result.runs.front(); }
};

// `others`: the same training traced at other device counts (analyze --scaling-from), to fit
// how its compute grows with the devices.
TraceAnalysis analyze_job(TraceJob job, const std::vector<TracedScale>& others = {});

// The text verdict.
std::string analysis_text(const TraceAnalysis& analysis);

// --json: schema ddpscope.analyze/1: the doctor's document of the result (doctor/doctor_result.h),
// with the traces' detail (each rank's breakdown, the matched collectives, the straggler, the
// prediction's inputs) beside it.
nlohmann::ordered_json to_json(const TraceAnalysis& analysis);

// --trace: one Chrome trace of every rank's steps and collectives (clocks aligned by the
// matched collectives, merged_trace.cpp) with the findings as annotations, for Perfetto.
std::string merged_chrome_trace(const TraceAnalysis& analysis);

}  // namespace ddp
