#include "predict_command.h"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ddpscope/error.h"
#include "doctor/doctor_file.h"
#include "doctor/forecast.h"
#include "doctor/interconnect.h"
#include "run_options.h"
#include "train/config/option_json.h"
#include "train/config/options.h"
#include "train/config/parse_value.h"
#include "train/config/run_config.h"
#include "train/records/run_summary.h"

namespace ddp {
namespace {

struct PredictOptions {
  std::string from;
  std::string interconnect = "measured";
  std::string devices_list_text;  // --devices-list as given
  std::vector<int> devices_list;
  bool json = false;
  RunOptions run;  // every option of train: the configuration to predict
};

// The device counts the model may be asked for: a count far beyond any machine's is a typo.
constexpr int kMostPredictedDevices = 65536;

// The option table's snake_case name for a name as typed: "no-shuffle" and "no_shuffle" are "shuffle".
std::string table_key(std::string name) {
  std::replace(name.begin(), name.end(), '_', '-');
  for (const OptionSpec& spec : option_specs()) {
    if (spec.negation == name) name = spec.name;
  }
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

// The options given by name, as typed: on the command line, then in the --config file.
std::vector<std::string> named_options(const CLI::App& command, const RunOptions& run) {
  std::vector<std::string> names;
  for (const auto& [name, value] : given_options(command, run)) names.push_back(name);
  if (!run.config_file.empty()) {
    for (const auto& [name, value] : read_yaml_options(run.config_file)) {
      if (name != "preset") names.push_back(name);
    }
  }
  return names;
}

// The doctor's configuration with the options the user gave, priced (doctor/forecast.h); the
// options the model does not depend on are named as typed.
Forecast forecast(const CLI::App& command, const PredictOptions& o) {
  // The configuration asked for, resolved and checked as train does (exit 2 on a bad value).
  ForecastRequest request{.from = o.from, .interconnect = o.interconnect, .devices_list = o.devices_list};
  request.asked = resolve_config(given_options(command, o.run), o.run.preset, o.run.config_file);
  validate_config(request.asked);
  if (o.interconnect != "measured") find_interconnect(o.interconnect);  // UsageError naming the presets
  std::vector<std::string> not_modelled;
  for (const std::string& name : named_options(command, o.run)) {
    const std::string key = table_key(name);
    request.given.push_back(key);
    std::string shown = name;
    std::replace(shown.begin(), shown.end(), '_', '-');
    shown = "--" + shown;
    if (!is_workload_key(key) && std::find(not_modelled.begin(), not_modelled.end(), shown) == not_modelled.end()) {
      not_modelled.push_back(shown);
    }
  }
  Forecast f = forecast(read_doctor_file(o.from), request);
  f.not_modelled = std::move(not_modelled);
  return f;
}

std::string seconds_text(double seconds) {
  return seconds >= 1e-3 || seconds == 0 ? fmt::format("{:.3f} s", seconds) : fmt::format("{:.1f} us", seconds * 1e6);
}

// The break-even of a sweep in words; where no value is one, the values that still win.
std::string break_even_text(const std::vector<SweepPoint>& sweep) {
  if (const auto from = break_even(sweep)) return std::to_string(*from);
  std::vector<int64_t> wins;
  for (const SweepPoint& point : sweep) {
    if (point.speedup > 1.0) wins.push_back(point.value);
  }
  const std::string none = fmt::format("none in {}..{}", sweep.front().value, sweep.back().value);
  if (wins.empty()) return none;
  return fmt::format("{} (faster at {}, but slower at {})", none, fmt::join(wins, ", "), sweep.back().value);
}

std::string sweep_text(const std::vector<SweepPoint>& sweep) {
  std::vector<std::string> items;
  for (const SweepPoint& point : sweep) items.push_back(fmt::format("{} {:.2f}x", point.value, point.speedup));
  return fmt::format("{}", fmt::join(items, ", "));
}

void print_text(const Forecast& f) {
  const WorkloadConfig& config = f.config;
  const Prediction& p = f.prediction;
  const WorkloadCounts& n = p.counts;
  fmt::print("Model: {}\n", f.from);
  fmt::print(
      "Configuration: {} device{} x batch {}, MLP {}-{}x{}-{} ({} parameters), {} samples, {} epochs, "
      "accumulate {}\n",
      config.devices, config.devices == 1 ? "" : "s", config.batch_size, config.input_dim, config.hidden_size,
      config.hidden_layers, config.output_dim, n.parameters, config.dataset_size, config.epochs,
      config.accumulate_grad_batches);
  if (!f.not_modelled.empty()) {
    fmt::print("Not modelled (the prediction is the same whatever their values): {}\n",
               fmt::join(f.not_modelled, ", "));
  }
  fmt::print("Interconnect: {} (alpha {:.2f} us per ring step, beta {:.2f} GB/s)\n", config.interconnect,
             p.alpha_seconds * 1e6, p.beta_bytes_per_second * 1e-9);
  fmt::print("Per rank and epoch: {} samples, {} micro-batches, {} optimizer steps, {} gradient syncs\n",
             n.samples_per_rank, n.micro_batches_per_epoch, n.optimizer_steps_per_epoch, n.syncs_per_epoch);
  fmt::print("\nPredicted wall time: {:.3f} s{} (1 device: {:.3f} s, speedup {:.2f}x)\n", p.wall_seconds,
             f.band ? fmt::format(" ± {:.0f} %", 100 * f.band->relative) : std::string(), p.one_device_wall_seconds,
             p.speedup);
  if (f.band) {
    fmt::print(
        "Band: the model's largest error on the nearest of the doctor's runs, {:.1f} % (at least {:.0f} %), plus "
        "{:.0f} % per e-fold from them ({:.2f} e-folds)\n",
        100 * f.band->fit_error, 100 * kBandFloor, 100 * kBandPerEFold, f.band->distance);
    for (const std::string& o : f.band->outside) fmt::print("Outside what the doctor measured: {}\n", o);
    if (f.busy_share >= 0.005) {  // what rounds to 0 % widens the band by nothing worth a line
      fmt::print(
          "Other processes took up to {:.0f} % of the machine's cores during the doctor's runs: the band "
          "widens by as much\n",
          100 * f.busy_share);
    }
    if (f.shared_cores_share > 0) {
      fmt::print(
          "Ranks outnumbered a machine's cores in the doctor's runs ({:.0f} % of its ranks without a core of their "
          "own): the band widens by as much\n",
          100 * f.shared_cores_share);
    }
  } else {
    fmt::print("Band: unknown ({} has no measured prediction rows to state the model's error)\n", f.from);
  }
  fmt::print("\n");
  fmt::print("{:<12} {:>10} {:>7}\n", "phase", "seconds", "share");
  for (std::size_t phase = 0; phase < kPhaseCount; ++phase) {
    if (traced_only(phase)) continue;  // no model phase
    fmt::print("{:<12} {:>10.4f} {:>6.1f}%\n", kPhaseNames[phase], p.phases[phase],
               100.0 * p.phases[phase] / p.wall_seconds);
  }
  fmt::print("{:<12} {:>10.4f} {:>6.1f}%\n", "wall", p.wall_seconds, 100.0);
  if (config.devices > 1) {
    fmt::print("\nAllreduce per sync: {} bucket{}, {} in all\n", n.bucket_bytes.size(),
               n.bucket_bytes.size() == 1 ? "" : "s", seconds_text(p.allreduce_seconds_per_sync));
    fmt::print("Speedup of {} devices over 1 by batch per device: {}\n", config.devices, sweep_text(f.batches));
    fmt::print("Speedup of {} devices over 1 by hidden width: {}\n", config.devices, sweep_text(f.widths));
    fmt::print("Smallest batch per device from which {} devices beat 1: {}\n", config.devices,
               break_even_text(f.batches));
    fmt::print("Smallest hidden width from which {} devices beat 1: {}\n", config.devices, break_even_text(f.widths));
  }
  if (!f.devices_list.empty()) {
    // The break-evens as above: from that value up to the top of the sweep, N devices win.
    fmt::print("\n{:>8} {:>10} {:>8} {:>12} {:>16} {:>16}\n", "devices", "wall s", "speedup", "comm_wait s",
               "break-even batch", "break-even width");
    const auto shown = [](int devices, const std::optional<int64_t>& value) {
      return devices == 1 ? std::string("-") : value ? std::to_string(*value) : std::string("none");
    };
    for (const DevicesRow& row : f.devices_list) {
      const Prediction& q = row.prediction;
      fmt::print("{:>8} {:>10.3f} {:>7.2f}x {:>12.4f} {:>16} {:>16}\n", q.config.devices, q.wall_seconds, q.speedup,
                 q.phases[static_cast<std::size_t>(Phase::kCommWait)], shown(q.config.devices, row.batch),
                 shown(q.config.devices, row.width));
    }
  }
}

nlohmann::ordered_json sweep_json(const std::vector<SweepPoint>& sweep, const char* name) {
  nlohmann::ordered_json points = nlohmann::ordered_json::array();
  for (const SweepPoint& point : sweep) points.push_back({{name, point.value}, {"speedup", point.speedup}});
  const auto from = break_even(sweep);
  return {{"break_even", from ? nlohmann::ordered_json(*from) : nlohmann::ordered_json(nullptr)}, {"sweep", points}};
}

nlohmann::ordered_json prediction_json(const Prediction& p) {
  nlohmann::ordered_json phases = nlohmann::ordered_json::object();
  for (std::size_t phase = 0; phase < kPhaseCount; ++phase) {
    if (!traced_only(phase)) phases[std::string(kPhaseNames[phase])] = p.phases[phase];
  }
  return {{"devices", p.config.devices},
          {"wall_seconds", p.wall_seconds},
          {"one_device_wall_seconds", p.one_device_wall_seconds},
          {"speedup", p.speedup},
          {"phases", phases}};
}

void print_json(const Forecast& f) {
  const WorkloadConfig& c = f.config;
  const Prediction& p = f.prediction;
  const WorkloadCounts& n = p.counts;
  nlohmann::ordered_json j;
  j["schema"] = "ddpscope.predict/1";
  j["from"] = f.from;
  j["config"] = {{"devices", c.devices},
                 {"dataset_size", c.dataset_size},
                 {"batch_size", c.batch_size},
                 {"input_dim", c.input_dim},
                 {"hidden_size", c.hidden_size},
                 {"hidden_layers", c.hidden_layers},
                 {"output_dim", c.output_dim},
                 {"max_epochs", c.epochs},
                 {"accumulate_grad_batches", c.accumulate_grad_batches},
                 {"log_every_n_steps", c.log_every_n_steps},
                 {"check_val_every_n_epoch", c.check_val_every_n_epoch},
                 {"bucket_cap_mb", c.bucket_cap_mb},
                 {"sync_every_micro_batch", c.sync_every_micro_batch},
                 {"monitor_mode", c.monitor_per_step ? "per-step" : "background"}};
  j["not_modelled"] = f.not_modelled;
  j["interconnect"] = {
      {"name", c.interconnect}, {"alpha_seconds", p.alpha_seconds}, {"beta_bytes_per_second", p.beta_bytes_per_second}};
  j["per_rank_and_epoch"] = {{"samples", n.samples_per_rank},
                             {"micro_batches", n.micro_batches_per_epoch},
                             {"optimizer_steps", n.optimizer_steps_per_epoch},
                             {"gradient_syncs", n.syncs_per_epoch}};
  j["parameters"] = n.parameters;
  j["prediction"] = prediction_json(p);
  if (f.band) {
    j["band"] = {{"relative", f.band->relative},
                 {"fit_error", f.band->fit_error},
                 {"distance_efolds", f.band->distance},
                 {"busy_share_of_cores", f.busy_share},
                 {"ranks_without_a_core_share", f.shared_cores_share},
                 {"outside", f.band->outside}};
  } else {
    j["band"] = nullptr;
  }
  j["allreduce_seconds_per_sync"] = p.allreduce_seconds_per_sync;
  j["batch_size"] = c.devices > 1 ? sweep_json(f.batches, "batch_size") : nlohmann::ordered_json(nullptr);
  j["hidden_size"] = c.devices > 1 ? sweep_json(f.widths, "hidden_size") : nlohmann::ordered_json(nullptr);
  j["devices_list"] = nlohmann::ordered_json::array();
  const auto optional_json = [](const std::optional<int64_t>& value) {
    return value ? nlohmann::ordered_json(*value) : nlohmann::ordered_json(nullptr);
  };
  for (const DevicesRow& row : f.devices_list) {
    nlohmann::ordered_json q = prediction_json(row.prediction);
    q["break_even_batch_size"] = optional_json(row.batch);
    q["break_even_hidden_size"] = optional_json(row.width);
    j["devices_list"].push_back(std::move(q));
  }
  fmt::print("{}\n", j.dump(2));
}

}  // namespace

void add_predict_command(CLI::App& app) {
  auto options = std::make_shared<PredictOptions>();
  PredictOptions& o = *options;
  CLI::App* predict = app.add_subcommand("predict", "the fitted model's time for another configuration");
  predict->add_option("--from", o.from, "doctor.json written by 'ddpscope doctor'")->required();
  add_run_options(*predict, o.run);
  std::string presets = "measured";
  for (const Interconnect& link : interconnect_presets()) presets += "|" + link.name;
  predict->add_option("--interconnect", o.interconnect, "the link for the gradient allreduce: " + presets)
      ->default_str("measured");
  predict->add_option("--devices-list", o.devices_list_text, "also tabulate these device counts, e.g. 1,2,3,8,64");
  predict->add_flag("--json", o.json, "print the prediction as one JSON object");
  predict->callback([options, predict] {
    if (predict->get_option("--devices-list")->count() > 0) {
      options->devices_list = parse_count_list(
          "devices-list", options->devices_list_text, kMostPredictedDevices,
          fmt::format("an increasing comma list of distinct device counts from 1 to {}, e.g. 1,2,3,8,64",
                      kMostPredictedDevices));
    }
    const Forecast f = forecast(*predict, *options);
    if (options->json)
      print_json(f);
    else
      print_text(f);
  });
}

}  // namespace ddp
