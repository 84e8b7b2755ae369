// doctor.json and compare.json from a DoctorResult: the layout tests, predict and the report read.
#include <algorithm>

#include "doctor/doctor_result.h"
#include "doctor/run_noise.h"
#include "train/config/option_json.h"
#include "train/config/options.h"
#include "train/records/run_summary.h"

namespace ddp {
namespace {

template <typename T>
nlohmann::ordered_json optional_json(const std::optional<T>& value) {
  return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
}

// A number that is 0 where unknown, as null.
nlohmann::ordered_json known(double value) { return value > 0 ? nlohmann::ordered_json(value) : nullptr; }

// A run read from traces: what they measured, and what they cannot say.
nlohmann::ordered_json traced_run_json(const RunRecord& run) {
  if (!run.ok) {
    return {{"label", run.label}, {"devices", run.devices}, {"command", run.command},
            {"ok", false},        {"source", "traces"},     {"error", run.error}};
  }
  const RunSummary& s = run.summary;
  nlohmann::ordered_json phases = nlohmann::ordered_json::array();
  for (const PhaseSeconds& rank : s.phases_per_rank) phases.push_back(phases_json(rank));
  return {{"label", run.label},
          {"devices", run.devices},
          {"command", run.command},
          {"ok", run.ok},
          {"source", "traces"},
          {"ranks", run.ranks},
          {"accelerator", spelling(s.accelerator)},
          {"gradient_transport", spelling(s.gradient_transport)},
          {"steps", s.optimizer_steps_run},
          {"wall_seconds", run.wall_seconds},
          {"command_wall_seconds", known(run.command_wall_seconds)},
          {"samples_per_step", known(run.samples_per_step)},
          {"phases_per_rank", phases},
          {"arrivals", arrivals_json(s.arrivals)},
          {"not_in_the_traces", kNotInTraces}};
}

nlohmann::ordered_json run_json(const RunRecord& run) {
  nlohmann::ordered_json j = {{"label", run.label},
                              {"devices", run.devices},
                              {"command", run.command},
                              {"epochs_run", run.epochs_run},
                              {"epochs", run.epochs_full},
                              {"extrapolated", run.extrapolated},
                              {"ok", run.ok}};
  if (!run.ok) {
    j["error"] = run.error;
    return j;
  }
  j["wall_seconds"] = run.wall_seconds;
  // As the doctor has always embedded it: keys in sorted order.
  const nlohmann::json summary(to_json(run.summary));
  j["summary"] = summary;
  nlohmann::ordered_json utilization = nlohmann::ordered_json::array();
  int device = 0;
  for (const auto& series : summary["utilization_per_rank"]) {
    utilization.push_back({{"device", device++}, {"points", series}});
  }
  j["utilization"] = utilization;
  // Its noise (run_noise.h): null when it has none (fewer than 3 epochs, no repeats).
  const std::optional<RunSample> sample = sample_of(run);
  j["sample"] = sample ? nlohmann::ordered_json{{"mean", sample->sample.mean},
                                                {"standard_error", sample->sample.standard_error},
                                                {"from", sample->source}}
                       : nlohmann::ordered_json(nullptr);
  if (!run.repeat_wall_seconds.empty()) j["repeat_wall_seconds"] = run.repeat_wall_seconds;
  return j;
}

// The ablation's effect against its baseline; its uncertainty and baseline_band (the
// baseline's own ±, 1.96 s / m: the report's band around zero) null where the noise is unknown.
nlohmann::ordered_json effect_json(const AblationResult& a) {
  const AblationEffect effect = ablation_effect(a);
  return {{"relative", effect.relative},
          {"uncertainty", optional_json(effect.uncertainty)},
          {"measurable", effect.measurable},
          {"text", effect.text},
          {"baseline_band", optional_json(effect.baseline_band)}};
}

nlohmann::ordered_json probe_json(const AllreduceFit& allreduce) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& row : allreduce.rows) {
    rows.push_back({{"ranks", row.point.ranks},
                    {"bytes", row.point.bytes},
                    {"seconds", row.point.seconds},
                    {"model_seconds", row.model_seconds},
                    {"algbw_bytes_per_second", row.algbw_bytes_per_second},
                    {"busbw_bytes_per_second", row.busbw_bytes_per_second}});
  }
  return rows;
}

// A traced prediction prices a step of an unknown configuration: its sizes are null.
nlohmann::ordered_json prediction_json(const PredictionRow& p) {
  const WorkloadConfig& w = p.workload;
  const auto size = [&](int64_t value) {
    return p.per_step ? nlohmann::ordered_json() : nlohmann::ordered_json(value);
  };
  return {{"label", optional_json(p.label)},
          {"ablation", optional_json(p.ablation)},
          {"devices", w.devices},
          {"interconnect", w.interconnect},
          {"per", p.per_step ? "step" : "run"},
          {"batch_size", size(w.batch_size)},
          {"hidden_size", size(w.hidden_size)},
          {"hidden_layers", size(w.hidden_layers)},
          {"predicted_wall_seconds", p.predicted_wall_seconds},
          {"predicted_speedup", p.predicted_speedup},
          {"measured_wall_seconds", optional_json(p.measured_wall_seconds)},
          {"error", optional_json(p.error())},
          {"modelled", p.modelled},
          {"band", optional_json(p.band)}};
}

nlohmann::ordered_json ablation_json(const AblationResult& a) {
  nlohmann::ordered_json j = {
      {"name", a.name},          {"devices", a.run.devices},       {"label", a.run.label},
      {"ok", a.run.ok},          {"epochs_run", a.run.epochs_run}, {"extrapolated", a.run.extrapolated},
      {"command", a.run.command}};
  if (a.run.ok && a.baseline->ok) {
    j["wall_seconds"] = a.run.wall_seconds;
    j["baseline_wall_seconds"] = a.baseline->wall_seconds;
    j["cost_seconds_per_step"] =
        (a.run.wall_seconds - a.baseline->wall_seconds) / std::max<int64_t>(1, a.baseline->optimizer_steps());
    j["effect"] = effect_json(a);
  } else {
    j["error"] = a.run.ok ? "its baseline run failed" : a.run.error;
  }
  return j;
}

}  // namespace

std::optional<double> PredictionRow::error() const {
  if (!measured_wall_seconds) return std::nullopt;
  return (predicted_wall_seconds - *measured_wall_seconds) / *measured_wall_seconds;
}

const RunRecord* DoctorResult::run_at(int devices) const {
  for (const RunRecord& r : runs) {
    if (r.devices == devices) return &r;
  }
  return nullptr;
}

std::optional<double> DoctorResult::speedup(const RunRecord& run) const {
  const RunRecord* one = run_at(1);
  if (one == nullptr || !one->ok || !run.ok) return std::nullopt;
  // Traced runs: samples per second where both runs said their samples, else as each device
  // keeps its batch (DDP's), N devices take N times the samples of one.
  const bool samples = one->samples_per_step > 0 && run.samples_per_step > 0;
  const double x = source == RunSource::kTraces ? one->seconds_per_step() / (samples ? one->samples_per_step : 1)
                                                : one->wall_seconds;
  const double y = source == RunSource::kTraces
                       ? run.seconds_per_step() / (samples ? run.samples_per_step : run.devices)
                       : run.wall_seconds;
  if (!(x > 0 && y > 0)) return std::nullopt;
  return x / y;
}

nlohmann::ordered_json to_json(const DoctorResult& result) {
  nlohmann::ordered_json doc;
  const bool traced = result.source == RunSource::kTraces;
  // A traced result is a doctor's answer without ablations: its findings are written.
  doc["schema"] = result.ablations_run || traced ? "ddpscope.doctor/1" : "ddpscope.compare/1";
  doc["version"] = DDPSCOPE_VERSION;
  doc["source"] = traced ? "traces" : "engine";
  if (traced) {
    doc["config"] = nullptr;
    doc["setup"] = nlohmann::ordered_json::object();
    for (const auto& [name, value] : result.setup) doc["setup"][name] = value;
  } else {
    doc["config"] = config_json(result.config);
  }
  doc["notes"] = result.notes;
  nlohmann::ordered_json commands = nlohmann::ordered_json::array({result.command});
  for (const RunRecord& r : result.runs) commands.push_back(r.command);
  doc["commands"] = commands;
  doc["runs"] = nlohmann::ordered_json::array();
  for (const RunRecord& r : result.runs) doc["runs"].push_back(traced ? traced_run_json(r) : run_json(r));
  nlohmann::ordered_json speedup = nlohmann::ordered_json::object();
  for (const RunRecord& r : result.runs) {
    if (const std::optional<double> s = result.speedup(r)) speedup[std::to_string(r.devices)] = *s;
  }
  doc["speedup"] = speedup;
  doc["model"] = result.model ? nlohmann::ordered_json(to_json(*result.model)) : nlohmann::ordered_json(nullptr);
  doc["allreduce_probe"] = probe_json(result.allreduce);
  doc["predictions"] = nlohmann::ordered_json::array();
  for (const PredictionRow& p : result.predictions) doc["predictions"].push_back(prediction_json(p));
  if (result.ablations_run) {
    doc["ablations"] = nlohmann::ordered_json::array();
    for (const AblationResult& a : result.ablations) doc["ablations"].push_back(ablation_json(a));
    doc["size_speedups"] = nlohmann::ordered_json::array();
    for (const SizeSpeedup& s : result.size_speedups) doc["size_speedups"].push_back(to_json(s));
  }
  if (result.ablations_run || traced) {
    doc["findings"] = nlohmann::ordered_json::array();
    for (const Finding& f : result.findings) doc["findings"].push_back(to_json(f));
  }
  if (result.ablations_run) {
    doc["runs_ablations"] = nlohmann::ordered_json::array();
    for (const AblationResult& a : result.ablations) doc["runs_ablations"].push_back(run_json(a.run));
  }
  return doc;
}

}  // namespace ddp
