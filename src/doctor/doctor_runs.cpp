#include "doctor/doctor_runs.h"

#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <type_traits>

#include "ddpscope/error.h"

namespace ddp {
namespace {

template <typename T>
void read(const nlohmann::json& run, const char* key, T& field) {
  const auto value = run.find(key);
  if (value == run.end()) return;
  if constexpr (std::is_same_v<T, bool>) {
    if (value->is_boolean()) field = value->get<bool>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (value->is_string()) field = value->get<std::string>();
  } else if constexpr (std::is_integral_v<T>) {
    // A value beyond T's range (devices 1e10) is no value, not a wrapped one.
    if (!value->is_number_integer()) return;
    if (value->is_number_unsigned() && value->get<uint64_t>() > uint64_t{INT64_MAX}) return;
    const int64_t v = value->get<int64_t>();
    if (v >= std::numeric_limits<T>::min() && v <= std::numeric_limits<T>::max()) field = static_cast<T>(v);
  } else {
    if (value->is_number()) field = value->get<T>();
  }
}

}  // namespace

std::vector<RunRecord> runs_of_doctor_json(const nlohmann::json& doctor) {
  std::vector<RunRecord> runs;
  const auto blocks = doctor.find("runs");
  if (!doctor.is_object() || blocks == doctor.end() || !blocks->is_array()) return runs;
  for (const nlohmann::json& block : *blocks) {
    if (!block.is_object()) continue;
    RunRecord run;
    run.devices = 0;
    read(block, "devices", run.devices);
    if (run.devices < 1) continue;
    run.label = fmt::format("devices={}", run.devices);
    read(block, "label", run.label);
    read(block, "command", run.command);
    read(block, "epochs_run", run.epochs_run);
    read(block, "epochs", run.epochs_full);
    read(block, "extrapolated", run.extrapolated);
    read(block, "ok", run.ok);
    read(block, "error", run.error);
    read(block, "wall_seconds", run.wall_seconds);
    if (const auto summary = block.find("summary"); summary != block.end() && summary->is_object()) {
      try {
        run.summary = nlohmann::ordered_json(*summary).get<RunSummary>();
      } catch (const Error&) {
        run.summary = RunSummary{};  // partly read: a summary this version cannot read is no measurement
      }
      if (run.summary.config) run.config = *run.summary.config;
    }
    runs.push_back(std::move(run));
  }
  return runs;
}

}  // namespace ddp
