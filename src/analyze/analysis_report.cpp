// report.html of a user's traces: the doctor's page (doctor/report_html.h) over a view of the
// analysis, one run per rank.
#include <cmath>
#include <limits>

#include "analyze/trace_analysis.h"
#include "doctor/report_html.h"

namespace ddp {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Per rank: (collective, how long after the first arrival it arrived, ms), arrivals counted
// back from each collective's common end.
std::vector<ReportPoints> arrival_lags(const TraceAnalysis& a) {
  std::vector<ReportPoints> out(a.ranks.size());
  if (!a.collectives) return out;
  const std::vector<std::vector<int64_t>>& durations = a.collectives->duration_ns;
  for (std::size_t c = 0; c < durations.size(); ++c) {
    int64_t longest = 0;
    for (int64_t d : durations[c]) longest = std::max(longest, d);
    for (std::size_t r = 0; r < out.size(); ++r) {
      out[r].emplace_back(static_cast<double>(c), static_cast<double>(longest - durations[c][r]) / 1e6);
    }
  }
  return out;
}

double mean_step_ms(const TraceAnalysis& a) {
  double sum = 0;
  for (const RankBreakdown& b : a.ranks) sum += b.step_ms;
  return sum / static_cast<double>(a.ranks.size());
}

}  // namespace

std::string analysis_report_html(const TraceAnalysis& a, const std::string& command) {
  ReportView view;
  view.kind = ReportKind::kAnalyze;
  view.schema = "ddpscope.analyze/1";
  view.version = DDPSCOPE_VERSION;
  view.notes = a.notes;
  view.config = {{"world size", std::to_string(a.job.world_size)},
                 {"backend", a.job.backend.empty() ? "—" : a.job.backend},
                 {"ranks traced", std::to_string(a.ranks.size())}};
  const std::vector<ReportPoints> lags = arrival_lags(a);
  const int straggler = a.straggler_part && a.collectives && a.collectives->straggler
                            ? a.ranks[static_cast<std::size_t>(a.collectives->straggler->rank)].rank
                            : -1;
  for (std::size_t i = 0; i < a.ranks.size(); ++i) {
    const RankBreakdown& b = a.ranks[i];
    view.config.emplace_back("rank " + std::to_string(b.rank), b.path);
    ReportRun run;
    run.label = "rank " + std::to_string(b.rank);
    run.devices = a.job.world_size;
    run.wall_seconds = b.step_ms * static_cast<double>(b.steps) / 1e3;
    run.speedup = kNaN;
    run.samples_per_second = kNaN;
    run.optimizer_steps = static_cast<double>(b.steps);
    run.phase_seconds = a.record.summary.phases_per_rank[i];
    run.arrival_lag_ms = i == 0 ? lags : std::vector<ReportPoints>{};
    run.straggler_rank = i == 0 ? straggler : -1;
    view.runs.push_back(std::move(run));
  }
  if (a.prediction) {
    for (const TracePredictionRow& row : a.prediction->rows) {
      if (view.predicted_speedups.empty() || view.predicted_speedups.back().interconnect != row.link) {
        view.predicted_speedups.push_back({row.link, {}});
      }
      view.predicted_speedups.back().points.emplace_back(row.devices, row.throughput);
      // Per step, not per run: the measured step beside the traced device count's row.
      const bool traced = row.devices == a.job.world_size && row.link == "measured";
      view.predictions.push_back({.label = "step",
                                  .interconnect = row.link,
                                  .devices = static_cast<double>(row.devices),
                                  .predicted_wall_seconds = row.step_ms / 1e3,
                                  .band = row.band,
                                  .measured_wall_seconds = traced ? mean_step_ms(a) / 1e3 : kNaN,
                                  .error = kNaN});
    }
  }
  std::vector<FindingView> findings;
  for (const Finding& f : a.findings) {
    findings.push_back({f.title, f.cost_seconds, f.share_of_wall, f.detail, f.fix, f.evidence});
  }
  view.findings = std::move(findings);
  view.commands = {command};
  return render_report_html(view);
}

}  // namespace ddp
