#include "predict_command.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "doctor/interconnect.h"
#include "doctor/scaling_model.h"

namespace ddp {
namespace {

struct PredictOptions {
  std::string from;
  int devices = 0;
  int64_t batch_size = 0, hidden_size = 0, hidden_layers = 0, max_epochs = 0, dataset_size = 0, accumulate = 0;
  std::string interconnect = "measured";
  std::vector<int> devices_list;
  // The options given, so that the others keep DOCTOR.json's configuration.
  CLI::Option *devices_opt = nullptr, *batch_opt = nullptr, *width_opt = nullptr, *layers_opt = nullptr,
              *epochs_opt = nullptr, *dataset_opt = nullptr, *accumulate_opt = nullptr;
};

nlohmann::json read_doctor_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) throw DataError(fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::exception& e) {
    throw DataError(fmt::format("{} is not valid JSON: {}", path, e.what()));
  }
}

// The largest device count among the doctor's runs, 1 when none says.
int largest_run(const nlohmann::json& doctor) {
  int largest = 1;
  const auto runs = doctor.find("runs");
  if (runs == doctor.end() || !runs->is_array()) return largest;
  for (const nlohmann::json& run : *runs) {
    const auto devices = run.find("devices");
    if (devices != run.end() && devices->is_number_integer()) largest = std::max(largest, devices->get<int>());
  }
  return largest;
}

std::string seconds_text(double seconds) {
  return seconds >= 1e-3 || seconds == 0 ? fmt::format("{:.3f} s", seconds) : fmt::format("{:.1f} us", seconds * 1e6);
}

std::string found_text(const std::optional<int64_t>& value, const char* range) {
  return value ? fmt::format("{}", *value) : fmt::format("none in {}", range);
}

void run_predict(const PredictOptions& o) {
  const nlohmann::json doctor = read_doctor_json(o.from);
  if (!doctor.is_object()) throw DataError(fmt::format("{} is not a JSON object", o.from));
  const auto model_block = doctor.find("model");
  if (model_block == doctor.end()) {
    throw DataError(fmt::format("{} has no \"model\" block; write one with 'ddpscope doctor'", o.from));
  }
  const auto config_block = doctor.find("config");
  if (config_block == doctor.end()) throw DataError(fmt::format("{} has no \"config\" block", o.from));
  ModelParameters model;
  WorkloadConfig config;
  try {
    model = model_from_json(*model_block);
    config = workload_from_config(*config_block, largest_run(doctor));
  } catch (const DataError& e) {
    throw DataError(fmt::format("{}: {}", o.from, e.what()));
  }
  // The doctor's measurements used its probe; a prediction runs without it.
  config.monitor_per_step = false;
  if (o.devices_opt->count()) config.devices = o.devices;
  if (o.batch_opt->count()) config.batch_size = o.batch_size;
  if (o.width_opt->count()) config.hidden_size = o.hidden_size;
  if (o.layers_opt->count()) config.hidden_layers = o.hidden_layers;
  if (o.epochs_opt->count()) config.epochs = o.max_epochs;
  if (o.dataset_opt->count()) config.dataset_size = o.dataset_size;
  if (o.accumulate_opt->count()) config.accumulate_grad_batches = o.accumulate;
  if (o.interconnect != "measured") find_interconnect(o.interconnect);  // UsageError naming the presets
  config.interconnect = o.interconnect;
  for (int n : o.devices_list) {
    if (n < 1) throw UsageError(fmt::format("--devices-list: '{}' is not accepted; expected integers >= 1", n));
  }

  const Prediction p = predict(model, config);
  const WorkloadCounts& n = p.counts;
  fmt::print("Model: {}\n", o.from);
  fmt::print("Configuration: {} device{} x batch {}, MLP {}-{}x{}-{} ({} parameters), {} samples, {} epochs, "
             "accumulate {}\n",
             config.devices, config.devices == 1 ? "" : "s", config.batch_size, config.input_dim, config.hidden_size,
             config.hidden_layers, config.output_dim, n.parameters, config.dataset_size, config.epochs,
             config.accumulate_grad_batches);
  fmt::print("Interconnect: {} (alpha {:.2f} us per ring step, beta {:.2f} GB/s)\n", config.interconnect,
             p.alpha_seconds * 1e6, p.beta_bytes_per_second * 1e-9);
  fmt::print("Per rank and epoch: {} samples, {} micro-batches, {} optimizer steps, {} gradient syncs\n",
             n.samples_per_rank, n.micro_batches_per_epoch, n.optimizer_steps_per_epoch, n.syncs_per_epoch);
  fmt::print("\nPredicted wall time: {:.3f} s (1 device: {:.3f} s, speedup {:.2f}x)\n\n", p.wall_seconds,
             p.one_device_wall_seconds, p.speedup);
  fmt::print("{:<12} {:>10} {:>7}\n", "phase", "seconds", "share");
  for (std::size_t phase = 0; phase < kPhaseCount; ++phase) {
    fmt::print("{:<12} {:>10.4f} {:>6.1f}%\n", kPhaseNames[phase], p.phases[phase],
               p.wall_seconds > 0 ? 100.0 * p.phases[phase] / p.wall_seconds : 0.0);
  }
  fmt::print("{:<12} {:>10.4f} {:>6.1f}%\n", "wall", p.wall_seconds, 100.0);
  if (config.devices > 1) {
    fmt::print("\nAllreduce per sync: {} bucket{}, {} in all\n", n.bucket_bytes.size(), n.bucket_bytes.size() == 1 ? "" : "s",
               seconds_text(p.allreduce_seconds_per_sync));
    fmt::print("Smallest batch per device at which {} devices beat 1: {}\n", config.devices,
               found_text(smallest_batch_where_n_beats_one(model, config, config.devices), "16..65536"));
    fmt::print("Smallest hidden width at which {} devices beat 1: {}\n", config.devices,
               found_text(smallest_width_where_n_beats_one(model, config, config.devices), "16..8192"));
  }
  if (!o.devices_list.empty()) {
    fmt::print("\n{:>8} {:>10} {:>8} {:>12} {:>14} {:>14}\n", "devices", "wall s", "speedup", "comm_wait s",
               "smallest batch", "smallest width");
    for (int devices : o.devices_list) {
      WorkloadConfig at = config;
      at.devices = devices;
      const Prediction q = predict(model, at);
      const std::string batch = devices > 1 ? found_text(smallest_batch_where_n_beats_one(model, at, devices), "range") : "-";
      const std::string width = devices > 1 ? found_text(smallest_width_where_n_beats_one(model, at, devices), "range") : "-";
      fmt::print("{:>8} {:>10.3f} {:>7.2f}x {:>12.4f} {:>14} {:>14}\n", devices, q.wall_seconds, q.speedup,
                 q.phases[static_cast<std::size_t>(Phase::kCommWait)], batch, width);
    }
  }
}

}  // namespace

void add_predict_command(CLI::App& app) {
  auto options = std::make_shared<PredictOptions>();
  PredictOptions& o = *options;
  CLI::App* predict = app.add_subcommand("predict", "the fitted model's time for another configuration");
  predict->add_option("--from", o.from, "doctor.json written by 'ddpscope doctor'")->required();
  o.devices_opt = predict->add_option("--devices", o.devices, "devices (default: the doctor's configuration)");
  o.batch_opt = predict->add_option("--batch-size", o.batch_size, "batch size per device");
  o.width_opt = predict->add_option("--hidden-size", o.hidden_size, "hidden layer width");
  o.layers_opt = predict->add_option("--hidden-layers", o.hidden_layers, "hidden layers");
  o.epochs_opt = predict->add_option("--max-epochs", o.max_epochs, "epochs");
  o.dataset_opt = predict->add_option("--dataset-size", o.dataset_size, "samples per epoch");
  o.accumulate_opt = predict->add_option("--accumulate-grad-batches", o.accumulate, "micro-batches per optimizer step");
  std::string presets = "measured";
  for (const Interconnect& link : interconnect_presets()) presets += "|" + link.name;
  predict->add_option("--interconnect", o.interconnect, "the link for the gradient allreduce: " + presets)
      ->default_str("measured");
  predict->add_option("--devices-list", o.devices_list, "also tabulate these device counts, e.g. 1,2,3,8,64")
      ->delimiter(',');
  predict->callback([options] { run_predict(*options); });
}

}  // namespace ddp
