#include "doctor/forecast.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "ddpscope/error.h"
#include "doctor/busy_machine.h"
#include "train/config/options.h"
#include "train/config/run_config.h"

namespace ddp {
namespace {

// A model fitted without a multi-device run has no price for communication: it predicts one
// device only. DataError naming the runs that failed, and why, when more are asked for.
void require_multi_device_run(const std::string& path, const std::vector<RunRecord>& runs, int devices) {
  if (devices <= 1) return;
  std::vector<std::string> failed;
  for (const RunRecord& run : runs) {
    if (run.devices > 1 && run.ok) return;
    if (run.devices > 1) {
      const std::string error = run.error.empty() ? "no error recorded" : run.error;
      failed.push_back(fmt::format("{}: {}", run.label, error.substr(0, error.find('\n'))));
    }
  }
  throw DataError(
      fmt::format("{}: the model has no multi-device run, so no price for communication, and predicts 1 "
                  "device only, not {}{}",
                  path, devices,
                  failed.empty() ? std::string(" (the doctor ran none)")
                                 : fmt::format(" (the doctor's failed: {})", fmt::join(failed, "; "))));
}

// A configuration's devices, or where it says auto, the most the doctor ran (1 when none says).
int devices_of(const Config& config, const std::vector<RunRecord>& runs) {
  if (config.trainer.devices > 0) return config.trainer.devices;
  int largest = 1;
  for (const RunRecord& run : runs) largest = std::max(largest, run.devices);
  return largest;
}

// The snake_case options a preset sets: those it changes from the defaults.
std::vector<std::string> preset_keys(const std::string& preset) {
  if (preset.empty()) return {};
  Config with;
  apply_preset(with, preset);
  const auto defaults = resolved_options(Config{});
  const auto set = resolved_options(with);
  std::vector<std::string> keys;
  for (std::size_t i = 0; i < set.size(); ++i) {
    if (set[i].first != "preset" && set[i].second != defaults[i].second) keys.push_back(set[i].first);
  }
  return keys;
}

// A model far from the doctor's own measurements describes other runs, or was edited.
constexpr double kMeasuredFactor = 100;

// The model is checked as it is read: it must predict a finite time for the doctor's own
// configuration, within kMeasuredFactor of each run the doctor measured at it.
void check_model(const std::string& path, const std::vector<RunRecord>& runs, const ModelParameters& model,
                 const WorkloadConfig& own) {
  try {
    require_finite_prediction(model, own);
    for (const RunRecord& run : runs) {
      const double measured = run.wall_seconds;
      WorkloadConfig at = own;
      at.devices = run.devices;
      const double predicted = predict(model, at).wall_seconds;
      if (measured > 0 && (predicted > kMeasuredFactor * measured || predicted * kMeasuredFactor < measured)) {
        throw DataError(
            fmt::format("\"model\" predicts {:.4g} s for {} device{}, which the doctor measured at "
                        "{:.4g} s; expected a model fitted to these runs (write it with 'ddpscope doctor')",
                        predicted, at.devices, at.devices == 1 ? "" : "s", measured));
      }
    }
  } catch (const Error& e) {
    throw DataError(fmt::format("{}: {}", path, e.what()));
  }
}

}  // namespace

Forecast forecast(const DoctorResult& doctor, const ForecastRequest& r) {
  if (doctor.source == RunSource::kTraces) {
    throw DataError(fmt::format(
        "{} was read from traces (its \"source\" is \"traces\"): predict prices configurations of ddpscope's "
        "engine, which traces do not give; that job's steps on other devices and links are in its \"predictions\"",
        r.from));
  }
  if (!doctor.model) throw DataError(fmt::format("{} has no \"model\"; write one with 'ddpscope doctor'", r.from));
  const std::vector<RunRecord>& runs = doctor.runs;
  const ModelParameters& model = *doctor.model;
  const Config& recorded = doctor.config;  // the doctor's configuration
  const WorkloadConfig own = workload_for(recorded, devices_of(recorded, runs));
  check_model(r.from, runs, model, own);

  // The given options (by name, or by the preset) replace the doctor's configuration.
  Forecast f;
  f.from = r.from;
  std::vector<std::string> given = preset_keys(r.asked.preset);
  given.insert(given.end(), r.given.begin(), r.given.end());
  Config merged = recorded;
  for (const auto& [key, text] : resolved_options(r.asked)) {
    if (std::find(given.begin(), given.end(), key) != given.end()) apply_option(merged, key, text);
  }
  f.config = workload_for(merged, devices_of(merged, runs));
  // The doctor's measurements used its probe; a prediction runs without it unless asked.
  if (std::find(given.begin(), given.end(), "monitor_mode") == given.end()) f.config.monitor_per_step = false;
  // The prices are the doctor's device's: a CPU's do not price a GPU's step, nor the reverse.
  f.config.on_gpu = own.on_gpu;
  f.config.interconnect = r.interconnect;

  try {
    require_finite_prediction(model, f.config);
  } catch (const DataError& e) {
    throw DataError(fmt::format("{}: {}", r.from, e.what()));
  }
  int most_devices = f.config.devices;
  for (int devices : r.devices_list) most_devices = std::max(most_devices, devices);
  require_multi_device_run(r.from, runs, most_devices);
  f.prediction = predict(model, f.config);
  if (const std::vector<MeasuredPoint> measured = measured_points(doctor.predictions); !measured.empty()) {
    f.band = prediction_band(measured, f.config);
    // Runs on a busy machine priced the work too dear, by up to the share the others took.
    f.busy_share = busiest_share_of_cores(runs);
    // Ranks sharing a machine's cores computed slower than the model prices a rank.
    f.shared_cores_share = most_ranks_without_a_core(runs);
    f.band->relative += f.busy_share + f.shared_cores_share;
  }
  if (f.config.devices > 1) {
    f.batches = batch_sweep(model, f.config, f.config.devices);
    f.widths = width_sweep(model, f.config, f.config.devices);
  }
  for (int devices : r.devices_list) {
    WorkloadConfig at = f.config;
    at.devices = devices;
    DevicesRow row{predict(model, at), std::nullopt, std::nullopt};
    if (devices > 1) {
      row.batch = smallest_batch_where_n_beats_one(model, at, devices);
      row.width = smallest_width_where_n_beats_one(model, at, devices);
    }
    f.devices_list.push_back(row);
  }
  return f;
}

}  // namespace ddp
