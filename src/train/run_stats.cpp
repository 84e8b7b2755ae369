#include "train/run_stats.h"

#include <charconv>

namespace ddp {
namespace {

nlohmann::ordered_json typed(const std::string& text) {
  if (text == "true") return true;
  if (text == "false") return false;
  const char* end = text.data() + text.size();
  int64_t integer = 0;
  if (auto [p, ec] = std::from_chars(text.data(), end, integer); ec == std::errc() && p == end && !text.empty()) {
    return integer;
  }
  double real = 0;
  if (auto [p, ec] = std::from_chars(text.data(), end, real); ec == std::errc() && p == end && !text.empty()) {
    return real;
  }
  return text;
}

nlohmann::ordered_json phases_json(const PhaseSeconds& seconds) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (std::size_t p = 0; p < kPhaseCount; ++p) out[std::string(kPhaseNames[p])] = seconds[p];
  return out;
}

}  // namespace

nlohmann::ordered_json config_json(const std::vector<std::pair<std::string, std::string>>& config) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [key, value] : config) out[key] = typed(value);
  return out;
}

nlohmann::ordered_json summary_json(const RunStats& stats,
                                    const std::vector<std::pair<std::string, std::string>>& config) {
  nlohmann::ordered_json j;
  j["schema"] = "ddpscope.summary/1";
  j["version"] = DDPSCOPE_VERSION;
  j["config"] = config_json(config);
  j["accelerator"] = stats.accelerator;
  j["strategy"] = stats.strategy;
  j["world_size"] = stats.world_size;
  j["epochs"] = stats.epochs;
  j["first_epoch_end_seconds"] = stats.first_epoch_end_seconds;
  j["last_epoch_end_seconds"] = stats.last_epoch_end_seconds;
  j["optimizer_steps"] = stats.optimizer_steps;
  j["train_samples"] = stats.train_samples;
  j["wall_seconds"] = stats.wall_seconds;
  const double samples_per_second = stats.wall_seconds > 0 ? stats.train_samples / stats.wall_seconds : 0.0;
  j["samples_per_second"] = samples_per_second;
  // Throughput: the model FLOP rate achieved, and its share of one core's measured GEMM
  // peak per device (the MFU idea).
  const double model_flops = stats.training_flops_per_sample * samples_per_second;
  j["throughput"] = {
      {"samples_per_second", samples_per_second},
      {"optimizer_steps_per_second", stats.wall_seconds > 0 ? stats.optimizer_steps_run / stats.wall_seconds : 0.0},
      {"model_flops_per_second", model_flops},
      {"gemm_peak_flops_per_second_per_device", stats.gemm_peak_flops_per_second},
      {"flop_share_of_peak", stats.gemm_peak_flops_per_second > 0
                                 ? model_flops / stats.world_size / stats.gemm_peak_flops_per_second
                                 : 0.0}};
  nlohmann::ordered_json final_metrics = nlohmann::ordered_json::object();
  final_metrics["train_loss"] = stats.final_train_loss ? nlohmann::ordered_json(*stats.final_train_loss) : nullptr;
  final_metrics["val_loss"] = stats.final_val_loss ? nlohmann::ordered_json(*stats.final_val_loss) : nullptr;
  j["final"] = final_metrics;
  PhaseSeconds mean{};
  for (const PhaseSeconds& rank : stats.phases_per_rank) {
    for (std::size_t p = 0; p < kPhaseCount; ++p) mean[p] += rank[p] / stats.phases_per_rank.size();
  }
  j["phases"] = phases_json(mean);
  j["hosts"] = stats.hosts;
  j["phases_per_rank"] = nlohmann::ordered_json::array();
  for (const PhaseSeconds& rank : stats.phases_per_rank) j["phases_per_rank"].push_back(phases_json(rank));
  auto allreduce_json = [](const AllreduceStats& a) {
    return nlohmann::ordered_json{{"calls", a.calls},
                                  {"bytes", a.bytes},
                                  {"seconds", a.seconds},
                                  {"in_flight_seconds", a.in_flight_seconds},
                                  {"hidden_seconds", a.hidden_seconds},
                                  {"hidden_share", a.in_flight_seconds > 0 ? a.hidden_seconds / a.in_flight_seconds : 0.0}};
  };
  j["utilization_per_rank"] = nlohmann::ordered_json::array();
  for (const auto& points : stats.utilization_per_rank) {
    nlohmann::ordered_json series = nlohmann::ordered_json::array();
    for (const auto& [t, percent] : points) series.push_back({t, percent});
    j["utilization_per_rank"].push_back(series);
  }
  j["allreduce"] = allreduce_json(stats.allreduce);
  j["allreduce_per_rank"] = nlohmann::ordered_json::array();
  for (const AllreduceStats& a : stats.allreduce_per_rank) j["allreduce_per_rank"].push_back(allreduce_json(a));
  return j;
}

}  // namespace ddp
