#include "doctor/report_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "doctor/doctor_result.h"
#include "doctor/ranks_shown.h"
#include "doctor/run_noise.h"
#include "train/config/option_json.h"

namespace ddp {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A config or model value as a user would type it.
std::string value_text(const nlohmann::ordered_json& v) {
  if (v.is_string()) return v.get_ref<const std::string&>().empty() ? "—" : v.get<std::string>();
  if (v.is_null()) return "—";
  return v.dump();
}

std::vector<DeviceUtilization> utilization_of(const RunSummary& s) {
  std::vector<DeviceUtilization> out;
  for (std::size_t device = 0; device < s.utilization_per_rank.size(); ++device) {
    DeviceUtilization series{static_cast<int>(device), s.utilization_per_rank[device], {}};
    if (device < s.cores_per_rank.size()) series.cores = s.cores_per_rank[device];
    out.push_back(std::move(series));
  }
  return out;
}

// Point k of a rank's series averages the steps [k * steps / n, (k + 1) * steps / n): it is
// drawn at the first of them, counted from 1.
std::vector<ReportPoints> arrival_lag_of(const ArrivalSummary& arrivals) {
  std::vector<ReportPoints> out;
  const auto steps = static_cast<double>(arrivals.steps);
  for (const std::vector<double>& series : arrivals.lag_ms_per_rank) {
    ReportPoints& points = out.emplace_back();
    const auto n = static_cast<double>(series.size());
    for (std::size_t k = 0; k < series.size(); ++k) {
      points.emplace_back(std::floor(static_cast<double>(k) * steps / n) + 1, series[k]);
    }
  }
  return out;
}

ReportRun run_of(const RunRecord& r) {
  ReportRun run;
  run.devices = r.devices;
  run.label = r.label.empty() ? fmt::format("devices={}", r.devices) : r.label;
  run.command = r.command;
  if (!r.ok) {
    run.wall_seconds = run.samples_per_second = run.optimizer_steps = kNaN;
    run.monitor_interval_ms = kNaN;
    return run;
  }
  const RunSummary& s = r.summary;
  run.wall_seconds = s.wall_seconds;
  run.samples_per_second = s.samples_per_second();
  run.optimizer_steps = static_cast<double>(s.optimizer_steps);
  std::array<double, kPhaseCount> phases = s.mean_phases();
  for (double& seconds : phases) seconds = std::max(seconds, 0.0);
  run.phase_seconds = phases;
  run.utilization = utilization_of(s);
  run.monitor_interval_ms = r.config.trainer.monitor_interval_ms;
  run.per_step_probe = r.config.trainer.monitor_mode == MonitorMode::kPerStep;
  run.arrival_lag_ms = arrival_lag_of(s.arrivals);
  run.straggler_rank = s.arrivals.straggler ? s.arrivals.straggler->rank : -1;
  return run;
}

const ReportRun* run_with_devices(const std::vector<ReportRun>& runs, int devices) {
  for (const ReportRun& r : runs)
    if (r.devices == devices && std::isfinite(r.wall_seconds)) return &r;
  return nullptr;
}

const ReportRun* largest_run(const std::vector<ReportRun>& runs) {
  const ReportRun* best = nullptr;
  for (const ReportRun& r : runs)
    if (!best || r.devices > best->devices) best = &r;
  return best;
}

// A run read from traces, one row per rank (of a large job, per rank that matters: ranks_shown.h):
// its step parts; its arrivals drawn on the first.
void traced_runs_of(const RunRecord& r, double speedup, bool one_run, std::vector<ReportRun>& out) {
  const RunSummary& s = r.summary;
  if (!r.ok) {  // a failed run: one row, its command
    ReportRun run;
    run.label = r.label;
    run.devices = r.devices;
    run.command = r.command;
    run.wall_seconds = run.samples_per_second = run.optimizer_steps = run.speedup = run.monitor_interval_ms = kNaN;
    out.push_back(std::move(run));
    return;
  }
  const auto rank_of = [&](std::size_t i) { return i < r.ranks.size() ? r.ranks[i] : static_cast<int>(i); };
  std::vector<double> step_ms, wait_ms;
  for (const std::array<double, kPhaseCount>& phases : s.phases_per_rank) {
    step_ms.push_back(std::accumulate(phases.begin(), phases.end(), 0.0));
    wait_ms.push_back(phases[static_cast<std::size_t>(Phase::kCommWait)]);
  }
  std::optional<std::size_t> waited_for;
  if (s.arrivals.straggler && s.arrivals.straggler->rank >= 0)
    waited_for = static_cast<std::size_t>(s.arrivals.straggler->rank);
  std::vector<ShownRank> shown = ranks_to_show(step_ms, wait_ms, waited_for);
  if (shown.empty()) shown.push_back({0, ""});
  const bool every_rank = shown.size() == s.phases_per_rank.size();
  for (const ShownRank& rank : shown) {
    const std::size_t i = rank.index;
    const bool first = &rank == &shown.front();
    ReportRun run;
    const std::string label = fmt::format("rank {}{}", rank_of(i), rank.why.empty() ? "" : " (" + rank.why + ")");
    run.label = one_run ? label : fmt::format("{} {}", r.label, label);
    run.devices = r.devices;
    run.command = first ? r.command : "";
    std::array<double, kPhaseCount> phases =
        i < s.phases_per_rank.size() ? s.phases_per_rank[i] : std::array<double, kPhaseCount>{};
    run.wall_seconds = 0;
    for (double& seconds : phases) run.wall_seconds += seconds, seconds = std::max(seconds, 0.0);
    run.phase_seconds = phases;
    run.speedup = first ? speedup : kNaN;
    run.monitor_interval_ms = kNaN;
    run.samples_per_second = first && r.samples_per_step > 0 ? r.samples_per_step / r.seconds_per_step() : kNaN;
    run.optimizer_steps = static_cast<double>(s.optimizer_steps_run);
    if (first) {
      run.arrival_lag_ms = arrival_lag_of(s.arrivals);
      run.straggler_rank = s.arrivals.straggler ? s.arrivals.straggler->rank : -1;
      if (!every_rank) {
        // The lines of the ranks shown: hundreds of lines are no chart.
        for (std::size_t k = 0; k < run.arrival_lag_ms.size(); ++k) {
          if (std::none_of(shown.begin(), shown.end(), [&](const ShownRank& x) { return x.index == k; }))
            run.arrival_lag_ms[k].clear();
        }
        const double steps = std::max<double>(1, static_cast<double>(s.optimizer_steps_run));
        for (std::size_t k = 0; k < step_ms.size(); ++k)
          run.step_ms_per_rank.emplace_back(rank_of(k), 1e3 * step_ms[k] / steps);
        for (const ShownRank& x : shown) run.shown_ranks.push_back(rank_of(x.index));
      }
    }
    out.push_back(std::move(run));
  }
}

// The doctor's speedup (DoctorResult::speedup): against the 1-device run.
std::vector<ReportRun> runs_of(const DoctorResult& result) {
  std::vector<ReportRun> runs;
  for (const RunRecord& r : result.runs) {
    const double speedup = result.speedup(r).value_or(kNaN);
    if (result.source == RunSource::kTraces) {
      traced_runs_of(r, speedup, result.runs.size() == 1, runs);
      continue;
    }
    ReportRun run = run_of(r);
    run.speedup = speedup;
    runs.push_back(std::move(run));
  }
  return runs;
}

ReportPoints measured_speedups_of(const std::vector<ReportRun>& runs) {
  ReportPoints measured;
  for (const ReportRun& r : runs)
    if (r.devices >= 1 && r.speedup > 0) measured.emplace_back(r.devices, r.speedup);
  std::sort(measured.begin(), measured.end());
  return measured;
}

// Predicted speedups at the configuration's own batch, width and depth, one curve per
// interconnect, relative to the model's 1-device time (communication-free, so the same for
// every interconnect). An ablation can keep the shape (monitor-background, no-overlap): only
// the baseline's rows are the curve.
std::vector<SpeedupCurve> predicted_speedups_of(const DoctorResult& result, const std::vector<ReportRun>& runs) {
  const auto same_shape = [&](const PredictionRow& p) {
    if (p.per_step) return true;  // a traced job's own shape
    return p.workload.batch_size == result.config.data.batch_size &&
           p.workload.hidden_size == result.config.model.hidden_size &&
           p.workload.hidden_layers == result.config.model.hidden_layers && !p.ablation;
  };
  double base = kNaN;
  for (const PredictionRow& p : result.predictions)
    if (same_shape(p) && p.workload.devices == 1 && p.workload.interconnect == "measured")
      base = p.predicted_wall_seconds;
  if (!std::isfinite(base))
    if (const ReportRun* one = run_with_devices(runs, 1)) base = one->wall_seconds;
  if (!(base > 0)) return {};

  std::vector<SpeedupCurve> curves;
  for (const PredictionRow& p : result.predictions) {
    if (!same_shape(p) || p.predicted_wall_seconds <= 0) continue;
    const std::string& name = p.workload.interconnect;
    auto it = std::find_if(curves.begin(), curves.end(), [&](const SpeedupCurve& c) { return c.interconnect == name; });
    if (it == curves.end()) it = curves.insert(curves.end(), SpeedupCurve{name, {}});
    it->points.emplace_back(p.workload.devices,
                            p.predicted_speedup > 0 ? p.predicted_speedup : base / p.predicted_wall_seconds);
  }
  for (SpeedupCurve& c : curves) {
    // Every interconnect shares the 1-device time, so lines start together at the baseline.
    if (std::none_of(c.points.begin(), c.points.end(), [](const auto& p) { return p.first == 1; }))
      c.points.emplace_back(1.0, 1.0);
    std::sort(c.points.begin(), c.points.end());
  }
  return curves;
}

std::vector<std::string> notes_of(const DoctorResult& result, const std::vector<ReportRun>& runs) {
  std::vector<std::string> notes;
  const int asked = result.source == RunSource::kEngine ? result.config.trainer.devices : 0;  // 0: auto
  const ReportRun* largest = largest_run(runs);
  if (asked > 0 && largest && largest->devices < asked) {
    notes.push_back(
        fmt::format("The configuration asks for {} devices; the largest run used {}.", asked, largest->devices));
  }
  notes.insert(notes.end(), result.notes.begin(), result.notes.end());
  return notes;
}

std::optional<HeadlineSpeedup> headline_of(const std::vector<ReportRun>& runs) {
  const ReportRun* largest = largest_run(runs);
  if (!largest || largest->devices <= 1 || !run_with_devices(runs, 1)) return std::nullopt;
  return HeadlineSpeedup{largest->devices, largest->speedup};
}

OptionTexts config_of(const Config& config) {
  OptionTexts out;
  const nlohmann::ordered_json options = config_json(config);
  for (const auto& [key, value] : options.items()) out.emplace_back(key, value_text(value));
  return out;
}

AblationRow ablation_of(const AblationResult& a) {
  AblationRow row;
  row.name = a.name;
  row.devices = a.run.devices;
  row.epochs_run = static_cast<double>(a.run.epochs_run);
  row.extrapolated = a.run.extrapolated;
  row.wall_seconds = row.baseline_wall_seconds = row.change = row.cost_seconds_per_step = kNaN;
  row.effect = row.effect_uncertainty = row.baseline_band = kNaN;
  if (!a.run.ok || !a.baseline->ok) {
    row.error = a.run.ok ? "its baseline run failed" : a.run.error;
    return row;
  }
  row.wall_seconds = a.run.wall_seconds;
  row.baseline_wall_seconds = a.baseline->wall_seconds;
  row.change = (row.wall_seconds - row.baseline_wall_seconds) / row.baseline_wall_seconds;
  row.cost_seconds_per_step = (a.run.wall_seconds - a.baseline->wall_seconds) /
                              static_cast<double>(std::max<int64_t>(1, a.baseline->optimizer_steps()));
  const AblationEffect effect = ablation_effect(a);
  row.effect = effect.relative;
  row.effect_uncertainty = effect.uncertainty.value_or(kNaN);
  row.measurable = effect.measurable;
  row.effect_text = effect.text;
  row.baseline_band = effect.baseline_band.value_or(kNaN);
  return row;
}

FindingView finding_of(const Finding& f) {
  return {.title = f.title,
          .cost_seconds = f.cost_seconds,
          .share_of_wall = f.share_of_wall,
          .detail = f.detail,
          .fix = f.fix,
          .evidence = f.evidence};
}

std::vector<ModelValue> model_of(const ModelParameters& model) {
  std::vector<ModelValue> out;
  const nlohmann::ordered_json prices = to_json(model);
  for (const auto& [key, value] : prices.items()) {
    out.push_back(value.is_number() ? ModelValue{key, value.get<double>(), ""}
                                    : ModelValue{key, std::nullopt, value_text(value)});
  }
  return out;
}

PredictionView prediction_of(const PredictionRow& p) {
  const WorkloadConfig& w = p.workload;
  if (p.per_step) {
    return {.label = "step",
            .interconnect = w.interconnect,
            .devices = static_cast<double>(w.devices),
            .batch_size = kNaN,
            .hidden_size = kNaN,
            .hidden_layers = kNaN,
            .predicted_wall_seconds = p.predicted_wall_seconds,
            .band = p.band.value_or(kNaN),
            .measured_wall_seconds = p.measured_wall_seconds.value_or(kNaN),
            .error = kNaN};
  }
  return {.label = p.label.value_or("—"),
          .interconnect = w.interconnect,
          .devices = static_cast<double>(w.devices),
          .batch_size = static_cast<double>(w.batch_size),
          .hidden_size = static_cast<double>(w.hidden_size),
          .hidden_layers = static_cast<double>(w.hidden_layers),
          .predicted_wall_seconds = p.predicted_wall_seconds,
          .band = p.band.value_or(kNaN),
          .measured_wall_seconds = p.measured_wall_seconds.value_or(kNaN),
          .error = p.error().value_or(kNaN),
          .modelled = p.modelled};
}

}  // namespace

ReportView build_report_view(const DoctorResult& result) {
  ReportView view;
  const bool traced = result.source == RunSource::kTraces;
  view.kind = traced ? ReportKind::kAnalyze : result.ablations_run ? ReportKind::kDoctor : ReportKind::kCompare;
  view.schema = result.ablations_run || traced ? "ddpscope.doctor/1" : "ddpscope.compare/1";
  view.version = DDPSCOPE_VERSION;
  view.seed_preset = !traced && result.config.preset == "seed";
  view.runs = runs_of(result);
  view.headline = headline_of(view.runs);
  view.notes = notes_of(result, view.runs);
  view.config = traced ? result.setup : config_of(result.config);
  if (traced) view.not_in_traces.assign(kNotInTraces.begin(), kNotInTraces.end());
  view.measured_speedups = measured_speedups_of(view.runs);
  view.predicted_speedups = predicted_speedups_of(result, view.runs);
  for (const SizeSpeedup& z : result.size_speedups) {
    view.sizes.push_back({.name = z.name,
                          .devices = static_cast<double>(z.devices),
                          .error = z.error,
                          .one_device_wall_seconds = z.one_device_wall_seconds,
                          .wall_seconds = z.wall_seconds,
                          .speedup = z.speedup,
                          .baseline_speedup = z.baseline_speedup,
                          .samples_per_second = z.samples_per_second});
  }
  if (result.ablations_run) {
    view.ablations.emplace();
    for (const AblationResult& a : result.ablations) {
      // A size shown as N devices against one is not shown again as a change of wall time.
      if (std::none_of(view.sizes.begin(), view.sizes.end(),
                       [&](const SizeSpeedupRow& z) { return z.name == a.name; })) {
        view.ablations->push_back(ablation_of(a));
      }
    }
  }
  if (result.ablations_run || traced) {
    view.findings.emplace();
    for (const Finding& f : result.findings) view.findings->push_back(finding_of(f));
  }
  if (result.model) view.model = model_of(*result.model);
  for (const PredictionRow& p : result.predictions) view.predictions.push_back(prediction_of(p));
  // Depth is a column only where the doctor varied it.
  const bool depth_varied =
      std::any_of(result.predictions.begin(), result.predictions.end(), [&](const PredictionRow& p) {
        return !p.per_step && p.workload.hidden_layers != result.config.model.hidden_layers;
      });
  if (!depth_varied) {
    for (PredictionView& p : view.predictions) p.hidden_layers = kNaN;
  }
  view.commands = {result.command};
  for (const RunRecord& r : result.runs) view.commands.push_back(r.command);
  return view;
}

}  // namespace ddp
