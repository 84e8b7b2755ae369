#include "doctor/report_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace ddp {
namespace {

using Json = nlohmann::ordered_json;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

const Json& null_json() {
  static const Json kNull;
  return kNull;
}

const Json& member(const Json& j, const char* key) {
  if (!j.is_object()) return null_json();
  const auto it = j.find(key);
  return it == j.end() ? null_json() : *it;
}

const Json& array_of(const Json& j, const char* key) {
  static const Json kEmpty = Json::array();
  const Json& v = member(j, key);
  return v.is_array() ? v : kEmpty;
}

double number_of(const Json& j, const char* key) {
  const Json& v = member(j, key);
  return v.is_number() ? v.get<double>() : kNaN;
}

std::string text_of(const Json& j, const char* key) {
  const Json& v = member(j, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}

// A config or model value as a user would type it.
std::string value_text(const Json& v) {
  if (v.is_string()) return v.get_ref<const std::string&>().empty() ? "—" : v.get<std::string>();
  if (v.is_null()) return "—";
  return v.dump();
}

int as_int(double v) { return std::isfinite(v) ? static_cast<int>(std::lround(v)) : 0; }

std::vector<std::string> strings_in(const Json& list) {
  std::vector<std::string> out;
  for (const Json& s : list)
    if (s.is_string()) out.push_back(s.get<std::string>());
  return out;
}

std::vector<DeviceUtilization> utilization_of(const Json& run) {
  std::vector<DeviceUtilization> out;
  const Json& cores_per_rank = array_of(member(run, "summary"), "cores_per_rank");
  for (const Json& d : array_of(run, "utilization")) {
    DeviceUtilization series{as_int(number_of(d, "device")), {}, {}};
    const int device = series.device;
    if (device >= 0 && static_cast<std::size_t>(device) < cores_per_rank.size()) {
      for (const Json& core : cores_per_rank[static_cast<std::size_t>(device)]) {
        if (core.is_number_integer()) series.cores.push_back(core.get<int>());
      }
    }
    for (const Json& p : array_of(d, "points")) {
      if (p.is_array() && p.size() >= 2 && p[0].is_number() && p[1].is_number())
        series.points.emplace_back(p[0].get<double>(), p[1].get<double>());
    }
    out.push_back(std::move(series));
  }
  return out;
}

std::optional<std::array<double, kPhaseCount>> phase_seconds_of(const Json& summary) {
  const Json& phases = member(summary, "phases");
  if (!phases.is_object()) return std::nullopt;
  std::array<double, kPhaseCount> seconds{};
  for (std::size_t p = 0; p < kPhaseCount; ++p) {
    const double s = number_of(phases, std::string(kPhaseNames[p]).c_str());
    seconds[p] = s > 0 ? s : 0;
  }
  return seconds;
}

// Point k of a rank's series averages the steps [k * steps / n, (k + 1) * steps / n): it is
// drawn at the first of them, counted from 1.
std::vector<ReportPoints> arrival_lag_of(const Json& summary) {
  const Json& arrivals = member(summary, "arrivals");
  const double steps = number_of(arrivals, "steps");
  std::vector<ReportPoints> out;
  for (const Json& series : array_of(arrivals, "lag_ms_per_rank")) {
    ReportPoints& points = out.emplace_back();
    if (!series.is_array() || !std::isfinite(steps)) continue;
    const double n = static_cast<double>(series.size());
    for (std::size_t k = 0; k < series.size(); ++k) {
      if (series[k].is_number()) points.emplace_back(std::floor(k * steps / n) + 1, series[k].get<double>());
    }
  }
  return out;
}

ReportRun run_of(const Json& r) {
  const Json& summary = member(r, "summary");
  const Json& config = member(summary, "config");
  ReportRun run;
  run.devices =
      as_int(std::isfinite(number_of(r, "devices")) ? number_of(r, "devices") : number_of(summary, "world_size"));
  run.label = text_of(r, "label");
  if (run.label.empty()) run.label = fmt::format("devices={}", run.devices);
  run.wall_seconds = number_of(summary, "wall_seconds");
  run.samples_per_second = number_of(summary, "samples_per_second");
  run.optimizer_steps = number_of(summary, "optimizer_steps");
  run.phase_seconds = phase_seconds_of(summary);
  run.utilization = utilization_of(r);
  run.monitor_interval_ms = number_of(config, "monitor_interval_ms");
  run.per_step_probe = text_of(config, "monitor_mode") == "per-step";
  run.command = text_of(r, "command");
  run.arrival_lag_ms = arrival_lag_of(summary);
  const double straggler = number_of(member(member(summary, "arrivals"), "straggler"), "rank");
  run.straggler_rank = std::isfinite(straggler) ? as_int(straggler) : -1;
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

std::vector<ReportRun> runs_of(const Json& doc) {
  std::vector<ReportRun> runs;
  for (const Json& r : array_of(doc, "runs")) runs.push_back(run_of(r));
  // The doctor's own speedup where it wrote one, else wall(1 device) / wall(N) from the runs.
  const ReportRun* one = run_with_devices(runs, 1);
  const double one_wall = one ? one->wall_seconds : kNaN;
  for (ReportRun& run : runs) {
    const double stated = number_of(member(doc, "speedup"), std::to_string(run.devices).c_str());
    run.speedup = std::isfinite(stated) ? stated : one && run.wall_seconds > 0 ? one_wall / run.wall_seconds : kNaN;
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

// Predicted speedups at the configuration's own batch and width, one curve per interconnect,
// relative to the model's 1-device time (communication-free, so the same for every interconnect).
std::vector<SpeedupCurve> predicted_speedups_of(const Json& doc, const std::vector<ReportRun>& runs) {
  const Json& predictions = array_of(doc, "predictions");
  if (predictions.empty()) return {};
  double batch = number_of(member(doc, "config"), "batch_size");
  double width = number_of(member(doc, "config"), "hidden_size");
  if (!std::isfinite(batch)) batch = number_of(predictions[0], "batch_size");
  if (!std::isfinite(width)) width = number_of(predictions[0], "hidden_size");
  double layers = number_of(member(doc, "config"), "hidden_layers");
  if (!std::isfinite(layers)) layers = number_of(predictions[0], "hidden_layers");
  const auto same = [](double value, double wanted) { return !std::isfinite(value) || value == wanted; };
  // An ablation can keep the shape (monitor-background, no-overlap): only baseline rows are the curve.
  const auto same_shape = [&](const Json& p) {
    return same(number_of(p, "batch_size"), batch) && same(number_of(p, "hidden_size"), width) &&
           same(number_of(p, "hidden_layers"), layers) && text_of(p, "ablation").empty();
  };
  double base = kNaN;
  for (const Json& p : predictions)
    if (same_shape(p) && as_int(number_of(p, "devices")) == 1 && text_of(p, "interconnect") == "measured")
      base = number_of(p, "predicted_wall_seconds");
  if (!std::isfinite(base))
    if (const ReportRun* one = run_with_devices(runs, 1)) base = one->wall_seconds;
  if (!(base > 0)) return {};

  std::vector<SpeedupCurve> curves;
  for (const Json& p : predictions) {
    const double devices = number_of(p, "devices"), wall = number_of(p, "predicted_wall_seconds");
    if (!same_shape(p) || !(devices >= 1) || !(wall > 0)) continue;
    const std::string name = text_of(p, "interconnect").empty() ? "model" : text_of(p, "interconnect");
    auto it = std::find_if(curves.begin(), curves.end(), [&](const SpeedupCurve& c) { return c.interconnect == name; });
    if (it == curves.end()) it = curves.insert(curves.end(), SpeedupCurve{name, {}});
    const double stated = number_of(p, "predicted_speedup");
    it->points.emplace_back(devices, stated > 0 ? stated : base / wall);
  }
  for (SpeedupCurve& c : curves) {
    // Every interconnect shares the 1-device time, so lines start together at the baseline.
    if (std::none_of(c.points.begin(), c.points.end(), [](const auto& p) { return p.first == 1; }))
      c.points.emplace_back(1.0, 1.0);
    std::sort(c.points.begin(), c.points.end());
  }
  return curves;
}

std::vector<std::string> notes_of(const Json& doc, const std::vector<ReportRun>& runs) {
  std::vector<std::string> notes;
  const double asked = number_of(member(doc, "config"), "devices");
  const ReportRun* largest = largest_run(runs);
  if (std::isfinite(asked) && largest && largest->devices < as_int(asked)) {
    notes.push_back(fmt::format("The configuration asks for {} devices; the largest run used {}.", as_int(asked),
                                largest->devices));
  }
  for (std::string& note : strings_in(array_of(doc, "notes"))) notes.push_back(std::move(note));
  return notes;
}

std::optional<HeadlineSpeedup> headline_of(const std::vector<ReportRun>& runs) {
  const ReportRun* largest = largest_run(runs);
  if (!largest || largest->devices <= 1 || !run_with_devices(runs, 1)) return std::nullopt;
  return HeadlineSpeedup{largest->devices, largest->speedup};
}

OptionTexts config_of(const Json& config) {
  OptionTexts out;
  if (!config.is_object()) return out;
  for (const auto& [key, value] : config.items()) out.emplace_back(key, value_text(value));
  return out;
}

AblationRow ablation_of(const Json& a) {
  AblationRow row;
  row.name = text_of(a, "name");
  row.devices = number_of(a, "devices");
  row.error = text_of(a, "error");
  row.wall_seconds = number_of(a, "wall_seconds");
  row.baseline_wall_seconds = number_of(a, "baseline_wall_seconds");
  row.change =
      row.baseline_wall_seconds > 0 ? (row.wall_seconds - row.baseline_wall_seconds) / row.baseline_wall_seconds : kNaN;
  row.epochs_run = number_of(a, "epochs_run");
  row.extrapolated = member(a, "extrapolated").is_boolean() && member(a, "extrapolated").get<bool>();
  row.cost_seconds_per_step = number_of(a, "cost_seconds_per_step");
  const Json& effect = member(a, "effect");
  row.effect = number_of(effect, "relative");
  row.effect_uncertainty = number_of(effect, "uncertainty");
  row.measurable = member(effect, "measurable").is_boolean() && member(effect, "measurable").get<bool>();
  row.effect_text = text_of(effect, "text");
  row.baseline_band = number_of(effect, "baseline_band");
  return row;
}

FindingView finding_of(const Json& f) {
  return {.title = text_of(f, "title"),
          .cost_seconds = number_of(f, "cost_seconds"),
          .share_of_wall = number_of(f, "share_of_wall"),
          .detail = text_of(f, "detail"),
          .fix = text_of(f, "fix"),
          .evidence = strings_in(array_of(f, "evidence"))};
}

std::vector<ModelValue> model_of(const Json& model) {
  std::vector<ModelValue> out;
  if (!model.is_object()) return out;
  for (const auto& [key, value] : model.items()) {
    out.push_back(value.is_number() ? ModelValue{key, value.get<double>(), ""}
                                    : ModelValue{key, std::nullopt, value_text(value)});
  }
  return out;
}

PredictionView prediction_of(const Json& p) {
  return {.label = value_text(member(p, "label")),
          .interconnect = value_text(member(p, "interconnect")),
          .devices = number_of(p, "devices"),
          .batch_size = number_of(p, "batch_size"),
          .hidden_size = number_of(p, "hidden_size"),
          .hidden_layers = number_of(p, "hidden_layers"),
          .predicted_wall_seconds = number_of(p, "predicted_wall_seconds"),
          .band = number_of(p, "band"),
          .measured_wall_seconds = number_of(p, "measured_wall_seconds"),
          .error = number_of(p, "error"),
          .modelled = !member(p, "modelled").is_boolean() || member(p, "modelled").get<bool>()};
}

}  // namespace

ReportView build_report_view(const nlohmann::ordered_json& doc) {
  ReportView view;
  const bool is_doctor =
      doc.contains("findings") || doc.contains("ablations") || text_of(doc, "schema").rfind("ddpscope.doctor", 0) == 0;
  view.kind = is_doctor ? ReportKind::kDoctor : ReportKind::kCompare;
  view.schema = value_text(member(doc, "schema"));
  view.version = value_text(member(doc, "version"));
  view.seed_preset = text_of(member(doc, "config"), "preset") == "seed";
  view.runs = runs_of(doc);
  view.headline = headline_of(view.runs);
  view.notes = notes_of(doc, view.runs);
  view.config = config_of(member(doc, "config"));
  view.measured_speedups = measured_speedups_of(view.runs);
  view.predicted_speedups = predicted_speedups_of(doc, view.runs);
  // compare.json has neither key; an empty list in doctor.json still gets its section and says so.
  for (const Json& z : array_of(doc, "size_speedups")) {
    view.sizes.push_back({.name = text_of(z, "name"),
                          .devices = number_of(z, "devices"),
                          .error = text_of(z, "error"),
                          .one_device_wall_seconds = number_of(z, "one_device_wall_seconds"),
                          .wall_seconds = number_of(z, "wall_seconds"),
                          .speedup = number_of(z, "speedup"),
                          .baseline_speedup = number_of(z, "baseline_speedup"),
                          .samples_per_second = number_of(z, "samples_per_second")});
  }
  if (doc.contains("ablations")) {
    view.ablations.emplace();
    for (const Json& a : array_of(doc, "ablations")) {
      // A size shown as N devices against one is not shown again as a change of wall time.
      const std::string name = text_of(a, "name");
      if (std::none_of(view.sizes.begin(), view.sizes.end(), [&](const SizeSpeedupRow& z) { return z.name == name; })) {
        view.ablations->push_back(ablation_of(a));
      }
    }
  }
  if (doc.contains("findings")) {
    view.findings.emplace();
    for (const Json& f : array_of(doc, "findings")) view.findings->push_back(finding_of(f));
  }
  view.model = model_of(member(doc, "model"));
  for (const Json& p : array_of(doc, "predictions")) view.predictions.push_back(prediction_of(p));
  view.commands = strings_in(array_of(doc, "commands"));
  return view;
}

ReportView build_report_view(const nlohmann::json& doc) { return build_report_view(nlohmann::ordered_json(doc)); }

}  // namespace ddp
