#include "train/records/run_summary.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "ddpscope/config.h"
#include "ddpscope/error.h"
#include "io/json_fields.h"
#include "train/config/option_json.h"
#include "train/config/options.h"
#include "train/config/run_config.h"

namespace ddp {
namespace {

using json_fields::member;
using json_fields::read;
using json_fields::read_array;

using Json = nlohmann::ordered_json;  // "config" keeps the option table's order

nlohmann::ordered_json allreduce_json(const AllreduceStats& a) {
  return {{"calls", a.calls},
          {"bytes", a.bytes},
          {"seconds", a.seconds},
          {"in_flight_seconds", a.in_flight_seconds},
          {"hidden_seconds", a.hidden_seconds},
          {"hidden_share", a.in_flight_seconds > 0 ? a.hidden_seconds / a.in_flight_seconds : 0.0}};
}

nlohmann::ordered_json sched_json(const SchedDelta& d) {
  return {{"run_seconds", d.run_seconds},
          {"wait_seconds", d.wait_seconds},
          {"wait_share", d.wait_share},
          {"voluntary_switches", d.voluntary_switches},
          {"involuntary_switches", d.involuntary_switches},
          {"steal_seconds", d.steal_seconds ? nlohmann::ordered_json(*d.steal_seconds) : nullptr}};
}

// One of an enum's spellings; what ran is never "auto".
template <typename E>
E read_spelling(const Json& j, const std::string& key, const std::string& where, std::string_view expected) {
  const std::string text = read<std::string>(j, key, where);
  const std::optional<E> value = from_spelling<E>(text);
  if (!value || text == "auto")
    throw DataError(fmt::format("{} field \"{}\" is \"{}\", expected {}", where, key, text, expected));
  return *value;
}

AllreduceStats read_allreduce(const Json& j, const std::string& where) {
  AllreduceStats a;
  a.calls = read<int64_t>(j, "calls", where);
  a.bytes = read<int64_t>(j, "bytes", where);
  a.seconds = read<double>(j, "seconds", where);
  a.in_flight_seconds = read<double>(j, "in_flight_seconds", where);
  a.hidden_seconds = read<double>(j, "hidden_seconds", where);
  return a;
}

SchedDelta read_sched(const Json& j, const std::string& where) {
  SchedDelta d;
  d.run_seconds = read<double>(j, "run_seconds", where);
  d.wait_seconds = read<double>(j, "wait_seconds", where);
  d.wait_share = read<double>(j, "wait_share", where);
  d.voluntary_switches = read<uint64_t>(j, "voluntary_switches", where);
  d.involuntary_switches = read<uint64_t>(j, "involuntary_switches", where);
  d.steal_seconds = json_fields::read_optional<double>(j, "steal_seconds", where);
  return d;
}

std::vector<int> read_cores(const Json& j, const std::string& where) {
  if (!j.is_array()) throw DataError(fmt::format("{} holds {}, expected a list of cores", where, j.dump()));
  std::vector<int> cores;
  for (const auto& core : j) {
    if (!core.is_number_integer())
      throw DataError(fmt::format("{} holds {}, expected core numbers", where, core.dump()));
    cores.push_back(core.get<int>());
  }
  return cores;
}

ThreadCensus read_census(const Json& j) {
  const std::string where = "summary.json threads_per_rank";
  ThreadCensus t;
  t.threads = static_cast<int>(read<int64_t>(j, "threads", where));
  t.omp_threads = static_cast<int>(read<int64_t>(j, "omp_threads", where));
  t.blas_threads = static_cast<int>(read<int64_t>(j, "blas_threads", where));
  return t;
}

bool same_allreduce(const AllreduceStats& a, const AllreduceStats& b) {
  return a.calls == b.calls && a.bytes == b.bytes && a.seconds == b.seconds &&
         a.in_flight_seconds == b.in_flight_seconds && a.hidden_seconds == b.hidden_seconds;
}

bool same_arrivals(const ArrivalSummary& a, const ArrivalSummary& b) {
  const auto same_rank = [](const RankArrival& x, const RankArrival& y) {
    return x.times_last == y.times_last && x.lag_ns == y.lag_ns && x.wait_ns == y.wait_ns &&
           x.caused_wait_ns == y.caused_wait_ns;
  };
  const auto same_straggler = [](const std::optional<Straggler>& x, const std::optional<Straggler>& y) {
    if (!x || !y) return x.has_value() == y.has_value();
    return x->rank == y->rank && x->last_share == y->last_share && x->late_seconds == y->late_seconds &&
           x->cost_seconds_per_step == y->cost_seconds_per_step;
  };
  return a.collectives == b.collectives && a.steps == b.steps && a.dropped == b.dropped &&
         std::equal(a.per_rank.begin(), a.per_rank.end(), b.per_rank.begin(), b.per_rank.end(), same_rank) &&
         same_straggler(a.straggler, b.straggler) && a.lag_ms_per_rank == b.lag_ms_per_rank;
}

bool same_config(const std::optional<Config>& a, const std::optional<Config>& b) {
  return a.has_value() == b.has_value() && (!a || resolved_options(*a) == resolved_options(*b));
}

bool same_sched(const SchedDelta& a, const SchedDelta& b) {
  return a.run_seconds == b.run_seconds && a.wait_seconds == b.wait_seconds && a.wait_share == b.wait_share &&
         a.voluntary_switches == b.voluntary_switches && a.involuntary_switches == b.involuntary_switches &&
         a.steal_seconds == b.steal_seconds;
}

}  // namespace

nlohmann::ordered_json phases_json(const PhaseSeconds& seconds) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (std::size_t p = 0; p < kPhaseCount; ++p) out[std::string(kPhaseNames[p])] = seconds[p];
  return out;
}

// The phases only a trace tells are absent from summaries written before they were phases.
PhaseSeconds read_phases(const nlohmann::ordered_json& j, const std::string& where) {
  PhaseSeconds out{};
  for (std::size_t p = 0; p < kPhaseCount; ++p) {
    const std::string name(kPhaseNames[p]);
    if (!traced_only(p) || j.contains(name)) out[p] = read<double>(j, name, where);
  }
  return out;
}

nlohmann::ordered_json arrivals_json(const ArrivalSummary& a) {
  nlohmann::ordered_json j;
  j["collectives"] = a.collectives;
  j["steps"] = a.steps;
  j["dropped"] = a.dropped;
  j["per_rank"] = nlohmann::ordered_json::array();
  for (const RankArrival& r : a.per_rank) {
    j["per_rank"].push_back({{"times_last", r.times_last},
                             {"lag_ns", r.lag_ns},
                             {"wait_ns", r.wait_ns},
                             {"caused_wait_ns", r.caused_wait_ns}});
  }
  if (a.straggler) {
    j["straggler"] = {{"rank", a.straggler->rank},
                      {"last_share", a.straggler->last_share},
                      {"late_seconds", a.straggler->late_seconds},
                      {"cost_seconds_per_step", a.straggler->cost_seconds_per_step}};
  } else {
    j["straggler"] = nullptr;
  }
  j["lag_ms_per_rank"] = a.lag_ms_per_rank;
  return j;
}

ArrivalSummary read_arrivals(const nlohmann::ordered_json& j, const std::string& where) {
  ArrivalSummary a;
  a.collectives = read<int64_t>(j, "collectives", where);
  a.steps = read<int64_t>(j, "steps", where);
  a.dropped = read<int64_t>(j, "dropped", where);
  for (const auto& rank : read_array(j, "per_rank", where)) {
    const std::string at = where + " per_rank";
    a.per_rank.push_back({.times_last = read<int64_t>(rank, "times_last", at),
                          .lag_ns = read<int64_t>(rank, "lag_ns", at),
                          .wait_ns = read<int64_t>(rank, "wait_ns", at),
                          .caused_wait_ns = read<int64_t>(rank, "caused_wait_ns", at)});
  }
  const Json& straggler = member(j, "straggler", where);
  if (!straggler.is_null()) {
    const std::string at = where + " straggler";
    a.straggler = Straggler{.rank = static_cast<int>(read<int64_t>(straggler, "rank", at)),
                            .last_share = read<double>(straggler, "last_share", at),
                            .late_seconds = read<double>(straggler, "late_seconds", at),
                            .cost_seconds_per_step = read<double>(straggler, "cost_seconds_per_step", at)};
  }
  for (const auto& series : read_array(j, "lag_ms_per_rank", where)) {
    std::vector<double>& points = a.lag_ms_per_rank.emplace_back();
    for (const auto& point : series) {
      if (!point.is_number()) {
        throw DataError(fmt::format("{} field \"lag_ms_per_rank\" holds {}, expected numbers", where, point.dump()));
      }
      points.push_back(point.get<double>());
    }
  }
  return a;
}

PhaseSeconds RunSummary::mean_phases() const {
  PhaseSeconds mean{};
  for (const PhaseSeconds& rank : phases_per_rank) {
    for (std::size_t p = 0; p < kPhaseCount; ++p) mean[p] += rank[p] / phases_per_rank.size();
  }
  return mean;
}

bool operator==(const HostLoad& a, const HostLoad& b) {
  return a.host == b.host && a.cores == b.cores && a.ranks == b.ranks && a.busy_core_seconds == b.busy_core_seconds &&
         a.ranks_cpu_seconds == b.ranks_cpu_seconds && a.interrupt_core_seconds == b.interrupt_core_seconds;
}

bool operator==(const RunSummary& a, const RunSummary& b) {
  const auto same_list = [](const std::vector<AllreduceStats>& x, const std::vector<AllreduceStats>& y) {
    return std::equal(x.begin(), x.end(), y.begin(), y.end(), same_allreduce);
  };
  return a.version == b.version && same_config(a.config, b.config) && a.accelerator == b.accelerator &&
         a.strategy == b.strategy && a.gradient_transport == b.gradient_transport && a.world_size == b.world_size &&
         a.hosts == b.hosts && a.epochs == b.epochs && a.first_epoch_end_seconds == b.first_epoch_end_seconds &&
         a.last_epoch_end_seconds == b.last_epoch_end_seconds && a.optimizer_steps == b.optimizer_steps &&
         a.optimizer_steps_run == b.optimizer_steps_run && a.train_samples == b.train_samples &&
         a.wall_seconds == b.wall_seconds && a.final_train_loss == b.final_train_loss &&
         a.final_val_loss == b.final_val_loss && a.phases_per_rank == b.phases_per_rank &&
         a.training_flops_per_sample == b.training_flops_per_sample &&
         a.gemm_peak_flops_per_second == b.gemm_peak_flops_per_second &&
         a.utilization_per_rank == b.utilization_per_rank && same_allreduce(a.allreduce, b.allreduce) &&
         same_list(a.allreduce_per_rank, b.allreduce_per_rank) &&
         std::equal(a.sched_per_rank.begin(), a.sched_per_rank.end(), b.sched_per_rank.begin(), b.sched_per_rank.end(),
                    same_sched) &&
         a.cores_per_rank == b.cores_per_rank && a.host_load == b.host_load &&
         a.threads_per_rank == b.threads_per_rank && same_arrivals(a.arrivals, b.arrivals) &&
         a.warnings == b.warnings && a.steady_epochs == b.steady_epochs;
}

nlohmann::ordered_json to_json(const RunSummary& s) {
  nlohmann::ordered_json j;
  j["schema"] = "ddpscope.summary/1";
  j["version"] = s.version;
  j["config"] = s.config ? config_json(*s.config) : Json::object();
  j["accelerator"] = spelling(s.accelerator);
  j["strategy"] = spelling(s.strategy);
  j["gradient_transport"] = spelling(s.gradient_transport);
  j["world_size"] = s.world_size;
  j["epochs"] = s.epochs;
  j["first_epoch_end_seconds"] = s.first_epoch_end_seconds;
  j["last_epoch_end_seconds"] = s.last_epoch_end_seconds;
  j["optimizer_steps"] = s.optimizer_steps;
  j["train_samples"] = s.train_samples;
  j["wall_seconds"] = s.wall_seconds;
  const double samples_per_second = s.samples_per_second();
  j["samples_per_second"] = samples_per_second;
  // Throughput: the model FLOP rate achieved, and its share of one device's measured GEMM
  // peak (a core's, or a GPU's in the run's precision): the MFU idea.
  const double model_flops = s.training_flops_per_sample * samples_per_second;
  j["throughput"] = {
      {"samples_per_second", samples_per_second},
      {"optimizer_steps_per_second", s.wall_seconds > 0 ? s.optimizer_steps_run / s.wall_seconds : 0.0},
      {"model_flops_per_second", model_flops},
      {"gemm_peak_flops_per_second_per_device", s.gemm_peak_flops_per_second},
      {"flop_share_of_peak",
       s.gemm_peak_flops_per_second > 0 ? model_flops / s.world_size / s.gemm_peak_flops_per_second : 0.0}};
  nlohmann::ordered_json final_metrics = nlohmann::ordered_json::object();
  final_metrics["train_loss"] = s.final_train_loss ? nlohmann::ordered_json(*s.final_train_loss) : nullptr;
  final_metrics["val_loss"] = s.final_val_loss ? nlohmann::ordered_json(*s.final_val_loss) : nullptr;
  j["final"] = final_metrics;
  j["phases"] = phases_json(s.mean_phases());
  j["hosts"] = s.hosts;
  j["phases_per_rank"] = nlohmann::ordered_json::array();
  for (const PhaseSeconds& rank : s.phases_per_rank) j["phases_per_rank"].push_back(phases_json(rank));
  j["utilization_per_rank"] = nlohmann::ordered_json::array();
  for (const auto& points : s.utilization_per_rank) {
    nlohmann::ordered_json series = nlohmann::ordered_json::array();
    for (const auto& [t, percent] : points) series.push_back({t, percent});
    j["utilization_per_rank"].push_back(series);
  }
  j["allreduce"] = allreduce_json(s.allreduce);
  j["allreduce_per_rank"] = nlohmann::ordered_json::array();
  for (const AllreduceStats& a : s.allreduce_per_rank) j["allreduce_per_rank"].push_back(allreduce_json(a));
  j["sched_per_rank"] = nlohmann::ordered_json::array();
  for (const SchedDelta& d : s.sched_per_rank) j["sched_per_rank"].push_back(sched_json(d));
  j["cores_per_rank"] = s.cores_per_rank;
  if (!s.host_load.empty()) {
    j["host_load"] = nlohmann::ordered_json::array();
    for (const HostLoad& h : s.host_load) {
      j["host_load"].push_back({{"host", h.host},
                                {"cores", h.cores},
                                {"ranks", h.ranks},
                                {"busy_core_seconds", h.busy_core_seconds},
                                {"ranks_cpu_seconds", h.ranks_cpu_seconds},
                                {"interrupt_core_seconds", h.interrupt_core_seconds},
                                {"others_core_seconds", h.others_core_seconds()}});
    }
  }
  j["threads_per_rank"] = nlohmann::ordered_json::array();
  for (const ThreadCensus& t : s.threads_per_rank) {
    j["threads_per_rank"].push_back(
        {{"threads", t.threads}, {"omp_threads", t.omp_threads}, {"blas_threads", t.blas_threads}});
  }
  j["arrivals"] = arrivals_json(s.arrivals);
  j["warnings"] = s.warnings;
  if (s.steady_epochs.count > 0) {
    j["steady_epochs"] = {{"count", s.steady_epochs.count},
                          {"mean_seconds", s.steady_epochs.mean_seconds},
                          {"sd_seconds", s.steady_epochs.sd_seconds}};
  }
  return j;
}

void from_json(const Json& j, RunSummary& s) { s = read_run_summary(j, "summary.json"); }

RunSummary read_run_summary(const Json& j, const std::string& where) {
  RunSummary s;
  if (read<std::string>(j, "schema", where) != "ddpscope.summary/1") {
    throw DataError(
        fmt::format("{} field \"schema\" is {}, expected \"ddpscope.summary/1\"", where, j["schema"].dump()));
  }
  s.version = read<std::string>(j, "version", where);
  const Json& config = member(j, "config", where);
  if (!config.is_object()) throw DataError(fmt::format("{} field \"config\" is not a JSON object", where));
  if (!config.empty()) s.config = config_from_json(config, where + " config");
  s.accelerator = read_spelling<Accelerator>(j, "accelerator", where, "cpu or cuda");
  s.strategy = read_spelling<Strategy>(j, "strategy", where, "single, ddp or ddp_zero1");
  s.world_size = static_cast<int>(read<int64_t>(j, "world_size", where));
  // Written since the NCCL transport; a summary from before it averaged over MPI, if at all.
  s.gradient_transport =
      j.contains("gradient_transport")
          ? read_spelling<GradientTransport>(j, "gradient_transport", where, "none, mpi, nccl, gloo or unknown")
      : s.world_size > 1 ? GradientTransport::kMpi
                         : GradientTransport::kNone;
  s.epochs = read<int64_t>(j, "epochs", where);
  s.first_epoch_end_seconds = read<double>(j, "first_epoch_end_seconds", where);
  s.last_epoch_end_seconds = read<double>(j, "last_epoch_end_seconds", where);
  s.optimizer_steps = read<int64_t>(j, "optimizer_steps", where);
  s.train_samples = read<int64_t>(j, "train_samples", where);
  s.wall_seconds = read<double>(j, "wall_seconds", where);
  // The file keeps rates; the step count and the FLOPs per sample behind them are integers
  // (a count, a sum of 2*in*out products), so rounding gives them back exactly.
  const Json& throughput = member(j, "throughput", where);
  s.optimizer_steps_run =
      std::llround(read<double>(throughput, "optimizer_steps_per_second", where + " throughput") * s.wall_seconds);
  const double samples_per_second = s.samples_per_second();
  s.training_flops_per_sample =
      samples_per_second > 0
          ? std::round(read<double>(throughput, "model_flops_per_second", where + " throughput") / samples_per_second)
          : 0.0;
  s.gemm_peak_flops_per_second =
      read<double>(throughput, "gemm_peak_flops_per_second_per_device", where + " throughput");
  const Json& final_metrics = member(j, "final", where);
  s.final_train_loss = json_fields::read_optional<double>(final_metrics, "train_loss", where + " final");
  s.final_val_loss = json_fields::read_optional<double>(final_metrics, "val_loss", where + " final");
  for (const auto& host : read_array(j, "hosts", where)) {
    if (!host.is_string())
      throw DataError(fmt::format("{} field \"hosts\" holds {}, expected strings", where, host.dump()));
    s.hosts.push_back(host.get<std::string>());
  }
  for (const auto& rank : read_array(j, "phases_per_rank", where))
    s.phases_per_rank.push_back(read_phases(rank, where + " phases_per_rank"));
  for (const auto& series : read_array(j, "utilization_per_rank", where)) {
    std::vector<std::pair<double, double>> points;
    for (const auto& point : series) {
      if (!point.is_array() || point.size() != 2 || !point[0].is_number() || !point[1].is_number()) {
        throw DataError(fmt::format("{} field \"utilization_per_rank\" holds {}, expected [seconds, percent]", where,
                                    point.dump()));
      }
      points.emplace_back(point[0].get<double>(), point[1].get<double>());
    }
    s.utilization_per_rank.push_back(std::move(points));
  }
  s.allreduce = read_allreduce(member(j, "allreduce", where), where + " allreduce");
  for (const auto& rank : read_array(j, "allreduce_per_rank", where)) {
    s.allreduce_per_rank.push_back(read_allreduce(rank, where + " allreduce_per_rank"));
  }
  for (const auto& rank : read_array(j, "sched_per_rank", where)) {
    s.sched_per_rank.push_back(read_sched(rank, where + " sched_per_rank"));
  }
  for (const auto& rank : read_array(j, "cores_per_rank", where)) {
    s.cores_per_rank.push_back(read_cores(rank, where + " field \"cores_per_rank\""));
  }
  if (j.contains("threads_per_rank")) {
    for (const auto& rank : read_array(j, "threads_per_rank", where)) s.threads_per_rank.push_back(read_census(rank));
  }
  if (j.contains("host_load")) {  // absent: some rank could not read /proc/stat, or from before it
    for (const auto& host : read_array(j, "host_load", where)) {
      const std::string in = where + " host_load";
      s.host_load.push_back({.host = read<std::string>(host, "host", in),
                             .cores = read<int>(host, "cores", in),
                             .ranks = host.contains("ranks") ? read<int>(host, "ranks", in) : 0,
                             .busy_core_seconds = read<double>(host, "busy_core_seconds", in),
                             .ranks_cpu_seconds = read<double>(host, "ranks_cpu_seconds", in),
                             // absent from summaries written before interrupts were kept apart
                             .interrupt_core_seconds = host.contains("interrupt_core_seconds")
                                                           ? read<double>(host, "interrupt_core_seconds", in)
                                                           : 0.0});
    }
  }
  s.arrivals = read_arrivals(member(j, "arrivals", where), where + " arrivals");
  s.warnings = json_fields::read_strings(j, "warnings", where);
  if (j.contains("steady_epochs")) {  // absent: fewer than 3 epochs, or a summary.json from before it
    const Json& steady = j["steady_epochs"];
    const std::string in = where + " steady_epochs";
    s.steady_epochs = {.count = read<int64_t>(steady, "count", in),
                       .mean_seconds = read<double>(steady, "mean_seconds", in),
                       .sd_seconds = read<double>(steady, "sd_seconds", in)};
  }
  return s;
}

}  // namespace ddp
