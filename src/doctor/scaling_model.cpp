#include "doctor/scaling_model.h"

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <utility>

#include "ddpscope/error.h"
#include "doctor/allreduce_probe.h"
#include "doctor/interconnect.h"
#include "train/records/run_summary.h"

namespace ddp {
namespace {

double at(const PhaseTimes& phases, Phase phase) { return phases[static_cast<std::size_t>(phase)]; }
double& at(PhaseTimes& phases, Phase phase) { return phases[static_cast<std::size_t>(phase)]; }

// Work over a rate; a rate of 0 means the work costs nothing measurable.
double per_rate(double work, double rate) { return rate > 0 ? work / rate : 0.0; }

// One observation y ~ c1*x1 + c2*x2 with residual weight w.
struct Row {
  double x1 = 0, x2 = 0, y = 0, w = 1;
};

// Weighted least squares for y ~ c1*x1 + c2*x2 with c1, c2 >= 0. When the two columns cannot
// be told apart (one is all zero, or they are proportional across the rows), the coefficient
// not kept is 0 and the kept one is fitted alone (keep: 1 or 2).
std::array<double, 2> fit_two_nonnegative(const std::vector<Row>& rows, int keep) {
  double s11 = 0, s22 = 0, s12 = 0, s1y = 0, s2y = 0;
  for (const Row& r : rows) {
    const double w2 = r.w * r.w;
    s11 += w2 * r.x1 * r.x1;
    s22 += w2 * r.x2 * r.x2;
    s12 += w2 * r.x1 * r.x2;
    s1y += w2 * r.x1 * r.y;
    s2y += w2 * r.x2 * r.y;
  }
  const double only1 = s11 > 0 ? std::max(0.0, s1y / s11) : 0.0;
  const double only2 = s22 > 0 ? std::max(0.0, s2y / s22) : 0.0;
  if (s11 == 0) return {0.0, only2};
  if (s22 == 0) return {only1, 0.0};
  // In the columns scaled to unit norm the normal matrix is [[1, c], [c, 1]], c the cosine
  // between them: proportional columns have 1 - c^2 at rounding level.
  const double cosine = s12 / std::sqrt(s11 * s22);
  if (1.0 - cosine * cosine < 1e-9) return keep == 1 ? std::array{only1, 0.0} : std::array{0.0, only2};
  const double det = s11 * s22 - s12 * s12;
  const double c1 = (s1y * s22 - s2y * s12) / det;
  const double c2 = (s2y * s11 - s1y * s12) / det;
  if (c1 < 0) return {0.0, only2};
  if (c2 < 0) return {only1, 0.0};
  return {c1, c2};
}

double fit_one_nonnegative(const std::vector<Row>& rows) {
  double sxx = 0, sxy = 0;
  for (const Row& r : rows) {
    sxx += r.w * r.w * r.x1 * r.x1;
    sxy += r.w * r.w * r.x1 * r.y;
  }
  return sxx > 0 ? std::max(0.0, sxy / sxx) : 0.0;
}

// Seconds of one gradient sync: every DDP bucket is its own ring allreduce.
double sync_seconds(const WorkloadCounts& counts, int ranks, double alpha, double beta) {
  double seconds = 0;
  for (int64_t bytes : counts.bucket_bytes) {
    seconds += ring_allreduce_seconds(ranks, static_cast<double>(bytes), alpha, beta);
  }
  return seconds;
}

// Forward + backward seconds of one epoch on one rank.
double compute_seconds_per_epoch(const ModelParameters& m, const WorkloadConfig& c, const WorkloadCounts& n) {
  return n.micro_batches_per_epoch * fixed_seconds_per_micro_batch(m, c, n) +
         per_rate(static_cast<double>(n.train_samples_per_epoch) * n.training_flops_per_sample, m.flops_per_second);
}

bool eager_on_gpu(const WorkloadConfig& c) { return c.on_gpu && !c.cuda_graph; }

PhaseTimes predict_phases(const ModelParameters& m, const WorkloadConfig& c, const WorkloadCounts& n, double sync_s) {
  PhaseTimes p{};
  const double epochs = static_cast<double>(c.epochs);
  // Contention is between ranks that share this machine's cores and memory; devices behind
  // another interconnect (GPUs, other nodes) do not slow each other's compute.
  const bool same_machine = c.interconnect == "measured" || c.interconnect == "shared-memory";
  const int sharing = same_machine ? c.devices - 1 : 0;
  const double shared = 1.0 + m.compute_contention * sharing;
  const double compute = compute_seconds_per_epoch(m, c, n) * shared;
  const double forward_share = n.forward_flops_per_sample / n.training_flops_per_sample;
  const bool starts_nccl = c.on_gpu && c.devices > 1 && !same_machine;
  at(p, Phase::kStartup) =
      m.startup_seconds + (c.devices > 1 ? m.launch_seconds : 0.0) + (starts_nccl ? kNcclStartupSeconds : 0.0);
  at(p, Phase::kForward) = epochs * compute * forward_share;
  at(p, Phase::kBackward) = epochs * compute * (1.0 - forward_share);
  at(p, Phase::kData) = shared * epochs *
                        (n.micro_batches_per_epoch * m.data_seconds_per_micro_batch +
                         n.train_samples_per_epoch * m.data_seconds_per_sample);
  at(p, Phase::kCommWait) = c.devices > 1 ? epochs * (n.syncs_per_epoch * sync_s + m.jitter_fraction * compute) : 0.0;
  at(p, Phase::kOptimizer) =
      shared * n.optimizer_steps *
      (m.optimizer_seconds_per_step + static_cast<double>(n.parameters) * m.optimizer_seconds_per_parameter);
  at(p, Phase::kValidation) =
      shared * n.validations *
      (n.val_batches_rank0 * m.val_fixed_seconds_per_batch +
       per_rate(static_cast<double>(n.val_samples_rank0) * n.forward_flops_per_sample, m.val_flops_per_second));
  at(p, Phase::kLogging) = epochs * m.fixed_seconds_per_epoch + n.logging_events * m.logging_seconds_per_event;
  at(p, Phase::kMonitor) = c.monitor_per_step ? (1.0 + m.monitor_contention * sharing) * epochs *
                                                    n.micro_batches_per_epoch * m.monitor_seconds_per_micro_batch
                                              : 0.0;
  at(p, Phase::kOther) = static_cast<double>(n.optimizer_steps) * m.host_seconds_per_step +
                         (eager_on_gpu(c) ? static_cast<double>(n.kernels) * m.eager_seconds_per_kernel : 0.0);
  return p;
}

double sum(const PhaseTimes& phases) {
  double total = 0;
  for (double seconds : phases) total += seconds;
  return total;
}

// The measured side of one run, as the fit needs it.
struct MeasuredRun {
  WorkloadConfig config;
  WorkloadCounts counts;
  PhaseTimes phases{};  // rank zero
  double wall_seconds = 0;
};

MeasuredRun measured_run(const RunSummary& summary, std::size_t index) {
  const std::string where = fmt::format("run {}'s summary", index + 1);
  MeasuredRun run;
  try {
    run.config = workload_from_summary(summary);
    run.counts = count_workload(run.config);
  } catch (const Error& e) {  // an option it cannot read (DataError) or out of range (UsageError)
    throw DataError(fmt::format("{}: {}", where, e.what()));
  }
  run.config.interconnect = "measured";
  if (summary.phases_per_rank.empty()) throw DataError(fmt::format("{} has no phases", where));
  run.wall_seconds = summary.wall_seconds;
  run.phases = summary.phases_per_rank[0];
  for (std::size_t p = 0; p < kPhaseCount; ++p) {
    if (!std::isfinite(run.phases[p])) throw DataError(fmt::format("{}: {} is not finite", where, kPhaseNames[p]));
  }
  if (!std::isfinite(run.wall_seconds)) throw DataError(fmt::format("{}: wall_seconds is not finite", where));
  const int64_t steps = summary.optimizer_steps, samples = summary.train_samples;
  const int64_t counted_samples = run.config.epochs * run.counts.train_samples_per_epoch * run.config.devices;
  if (steps != run.counts.optimizer_steps || samples != counted_samples) {
    throw DataError(
        fmt::format("{}: {} optimizer steps and {} samples measured, {} and {} counted for {} complete "
                    "epochs; the model needs runs of whole epochs (no --max-steps stop)",
                    where, steps, samples, run.counts.optimizer_steps, counted_samples, run.config.epochs));
  }
  return run;
}

template <typename Setter>
std::vector<SweepPoint> sweep(const ModelParameters& model, WorkloadConfig config, int devices, int64_t from,
                              int64_t to, Setter set) {
  if (devices < 2)
    throw UsageError(fmt::format("--devices: '{}' is not accepted here; expected an integer >= 2", devices));
  config.devices = devices;
  std::vector<SweepPoint> points;
  for (int64_t value = from; value <= to; value *= 2) {
    set(config, value);
    points.push_back({value, predict(model, config).speedup});
  }
  return points;
}

struct JsonField {
  const char* name;
  double ModelParameters::*member;
  bool required = true;  // false: added later, 0 in older doctor.json files
};

constexpr JsonField kModelFields[] = {
    {"alpha_seconds", &ModelParameters::alpha_seconds},
    {"beta_bytes_per_second", &ModelParameters::beta_bytes_per_second},
    {"flops_per_second", &ModelParameters::flops_per_second},
    {"fixed_seconds_per_step", &ModelParameters::fixed_seconds_per_step},
    {"fixed_seconds_per_epoch", &ModelParameters::fixed_seconds_per_epoch},
    {"startup_seconds", &ModelParameters::startup_seconds},
    {"launch_seconds", &ModelParameters::launch_seconds},
    {"val_flops_per_second", &ModelParameters::val_flops_per_second},
    {"val_fixed_seconds_per_batch", &ModelParameters::val_fixed_seconds_per_batch},
    {"data_seconds_per_micro_batch", &ModelParameters::data_seconds_per_micro_batch},
    {"data_seconds_per_sample", &ModelParameters::data_seconds_per_sample},
    {"optimizer_seconds_per_step", &ModelParameters::optimizer_seconds_per_step},
    {"optimizer_seconds_per_parameter", &ModelParameters::optimizer_seconds_per_parameter},
    {"logging_seconds_per_event", &ModelParameters::logging_seconds_per_event},
    {"monitor_seconds_per_micro_batch", &ModelParameters::monitor_seconds_per_micro_batch},
    {"compute_contention", &ModelParameters::compute_contention},
    {"monitor_contention", &ModelParameters::monitor_contention},
    {"jitter_fraction", &ModelParameters::jitter_fraction},
    {"seconds_per_kernel", &ModelParameters::seconds_per_kernel, false},
    {"eager_seconds_per_kernel", &ModelParameters::eager_seconds_per_kernel, false},
    {"host_seconds_per_step", &ModelParameters::host_seconds_per_step, false},
};

}  // namespace

AllreduceFit fit_allreduce(const std::vector<AllreducePoint>& points) {
  std::vector<Row> rows;
  for (const AllreducePoint& point : points) {
    if (point.ranks < 2 || !(point.seconds > 0) || !(point.bytes >= 0)) continue;
    const double steps = 2.0 * (point.ranks - 1);
    rows.push_back({steps, steps / point.ranks * point.bytes, point.seconds, 1.0 / point.seconds});
  }
  if (rows.empty()) throw DataError("the allreduce probe has no measurement with 2 or more ranks and a positive time");
  // Latency is what every message pays: with one message size only, it is all latency.
  const auto [alpha, inverse_beta] = fit_two_nonnegative(rows, 1);
  AllreduceFit fit;
  fit.alpha_seconds = alpha;
  fit.beta_bytes_per_second = inverse_beta > 0 ? 1.0 / inverse_beta : 0.0;
  for (const AllreducePoint& point : points) {
    fit.rows.push_back({point, ring_allreduce_seconds(point.ranks, point.bytes, alpha, fit.beta_bytes_per_second),
                        algbw(point.bytes, point.seconds), busbw(point.ranks, point.bytes, point.seconds)});
  }
  return fit;
}

AllreduceFit fit_allreduce(const std::vector<ProbePoint>& points) {
  std::vector<AllreducePoint> converted;
  for (const ProbePoint& p : points) converted.push_back({p.ranks, static_cast<double>(p.bytes), p.seconds});
  return fit_allreduce(converted);
}

Prediction predict(const ModelParameters& model, const WorkloadConfig& config) {
  Prediction out;
  out.config = config;
  out.counts = count_workload(config);
  if (config.interconnect == "measured") {
    out.alpha_seconds = model.alpha_seconds;
    out.beta_bytes_per_second = model.beta_bytes_per_second;
  } else {
    const Interconnect& link = find_interconnect(config.interconnect);
    out.alpha_seconds = link.alpha_seconds;
    out.beta_bytes_per_second = link.beta_bytes_per_second;
  }
  out.allreduce_seconds_per_sync =
      sync_seconds(out.counts, config.devices, out.alpha_seconds, out.beta_bytes_per_second);
  out.phases = predict_phases(model, config, out.counts, out.allreduce_seconds_per_sync);
  out.wall_seconds = sum(out.phases);
  if (config.devices == 1) {
    out.one_device_wall_seconds = out.wall_seconds;
  } else {
    WorkloadConfig one = config;
    one.devices = 1;
    out.one_device_wall_seconds = sum(predict_phases(model, one, count_workload(one), 0.0));
  }
  out.speedup = out.wall_seconds > 0 ? out.one_device_wall_seconds / out.wall_seconds : 1.0;
  return out;
}

void require_finite_prediction(const ModelParameters& model, const WorkloadConfig& config) {
  const Prediction p = predict(model, config);
  for (const auto& [seconds, devices] :
       {std::pair{p.wall_seconds, config.devices}, std::pair{p.one_device_wall_seconds, 1}}) {
    if (!std::isfinite(seconds) || !(seconds > 0)) {
      throw DataError(
          fmt::format("\"model\" predicts a wall time of {} s for {} device{} x batch {}; expected a finite "
                      "time > 0 (write the model with 'ddpscope doctor')",
                      seconds, devices, devices == 1 ? "" : "s", config.batch_size));
    }
  }
}

ModelParameters fit_model(const std::vector<RunSummary>& summaries, const AllreduceFit& allreduce) {
  if (summaries.empty()) throw DataError("no runs to fit the scaling model to");
  std::vector<MeasuredRun> runs;
  for (std::size_t i = 0; i < summaries.size(); ++i) runs.push_back(measured_run(summaries[i], i));

  ModelParameters m;
  m.alpha_seconds = allreduce.alpha_seconds;
  m.beta_bytes_per_second = allreduce.beta_bytes_per_second;
  // Per-rank prices come from the 1-device runs when there are any: the multi-device runs
  // then tell how much ranks sharing the machine slow each other down.
  const bool have_single =
      std::any_of(runs.begin(), runs.end(), [](const MeasuredRun& r) { return r.config.devices == 1; });
  const bool on_gpu = runs.front().config.on_gpu;
  for (const MeasuredRun& r : runs) {
    if (r.config.on_gpu != on_gpu) {
      throw DataError("the runs are of both a CPU and a GPU; a scaling model prices one kind of device");
    }
  }
  // Eager GPU runs pay for each launch from the host: the other prices come from the runs in
  // CUDA graphs where there are any, and the eager runs price that launch.
  const bool have_graphs =
      std::any_of(runs.begin(), runs.end(), [](const MeasuredRun& r) { return !eager_on_gpu(r.config); });
  const auto launched_eagerly = [&](const MeasuredRun& r) { return have_graphs && eager_on_gpu(r.config); };
  std::vector<Row> compute, data, optimizer, validation, logging, monitor, host;
  for (const MeasuredRun& r : runs) {
    if ((have_single && r.config.devices > 1) || launched_eagerly(r)) continue;
    const WorkloadCounts& n = r.counts;
    const double e = static_cast<double>(r.config.epochs);
    const double w = r.wall_seconds > 0 ? 1.0 / r.wall_seconds : 1.0;
    const double micro = e * n.micro_batches_per_epoch;
    const double samples = e * n.train_samples_per_epoch;
    compute.push_back({on_gpu ? micro * n.kernels_per_micro_batch : micro, samples * n.training_flops_per_sample,
                       at(r.phases, Phase::kForward) + at(r.phases, Phase::kBackward), w});
    data.push_back({micro, samples, at(r.phases, Phase::kData), w});
    optimizer.push_back({static_cast<double>(n.optimizer_steps), static_cast<double>(n.optimizer_steps) * n.parameters,
                         at(r.phases, Phase::kOptimizer), w});
    if (n.validations > 0) {
      validation.push_back({static_cast<double>(n.validations * n.val_batches_rank0),
                            static_cast<double>(n.validations * n.val_samples_rank0) * n.forward_flops_per_sample,
                            at(r.phases, Phase::kValidation), w});
    }
    logging.push_back({e, static_cast<double>(n.logging_events), at(r.phases, Phase::kLogging), w});
    if (r.config.monitor_per_step) monitor.push_back({micro, 0, at(r.phases, Phase::kMonitor), w});
    host.push_back({static_cast<double>(n.optimizer_steps), 0, at(r.phases, Phase::kOther), w});
  }
  // A fixed cost per micro-batch is only told apart from FLOPs by runs of several shapes;
  // otherwise everything is rate, so that other batch sizes and widths scale with FLOPs.
  const auto [fixed, inverse_rate] = fit_two_nonnegative(compute, 2);
  (on_gpu ? m.seconds_per_kernel : m.fixed_seconds_per_step) = fixed;
  m.flops_per_second = inverse_rate > 0 ? 1.0 / inverse_rate : 0.0;
  const auto [d0, d1] = fit_two_nonnegative(data, 2);
  m.data_seconds_per_micro_batch = d0;
  m.data_seconds_per_sample = d1;
  const auto [o0, o1] = fit_two_nonnegative(optimizer, 2);
  m.optimizer_seconds_per_step = o0;
  m.optimizer_seconds_per_parameter = o1;
  if (validation.empty()) {
    m.val_flops_per_second = m.flops_per_second;
  } else {
    const auto [a_val, inverse_val_rate] = fit_two_nonnegative(validation, 2);
    m.val_fixed_seconds_per_batch = a_val;
    m.val_flops_per_second = inverse_val_rate > 0 ? 1.0 / inverse_val_rate : 0.0;
  }
  const auto [l0, l1] = fit_two_nonnegative(logging, 1);
  m.fixed_seconds_per_epoch = l0;
  m.logging_seconds_per_event = l1;
  m.monitor_seconds_per_micro_batch = fit_one_nonnegative(monitor);
  m.host_seconds_per_step = fit_one_nonnegative(host);

  // Contention: the multi-device runs' per-rank work over what the 1-device prices give.
  if (have_single) {
    std::vector<Row> shared, probe;
    for (const MeasuredRun& r : runs) {
      if (r.config.devices < 2 || launched_eagerly(r)) continue;
      ModelParameters alone = m;
      alone.jitter_fraction = 0;
      const PhaseTimes base = predict_phases(alone, r.config, r.counts, 0.0);
      double modelled = 0, measured = 0;
      for (const Phase phase :
           {Phase::kForward, Phase::kBackward, Phase::kData, Phase::kOptimizer, Phase::kValidation}) {
        modelled += at(base, phase);
        measured += at(r.phases, phase);
      }
      const double extra = static_cast<double>(r.config.devices - 1);
      const double w = r.wall_seconds > 0 ? 1.0 / r.wall_seconds : 1.0;
      shared.push_back({extra * modelled, 0, measured - modelled, w});
      if (r.config.monitor_per_step) {
        probe.push_back(
            {extra * at(base, Phase::kMonitor), 0, at(r.phases, Phase::kMonitor) - at(base, Phase::kMonitor), w});
      }
    }
    m.compute_contention = fit_one_nonnegative(shared);
    m.monitor_contention = fit_one_nonnegative(probe);
  }

  // Start-up: the mean of the 1-device runs, and what more ranks add to it.
  double s1 = 0, s1_weight = 0, sn = 0, sn_weight = 0;
  for (const MeasuredRun& r : runs) {
    const double w = r.wall_seconds > 0 ? 1.0 / r.wall_seconds : 1.0;
    (r.config.devices == 1 ? s1 : sn) += w * w * at(r.phases, Phase::kStartup);
    (r.config.devices == 1 ? s1_weight : sn_weight) += w * w;
  }
  if (s1_weight > 0) {
    m.startup_seconds = s1 / s1_weight;
    m.launch_seconds = sn_weight > 0 ? std::max(0.0, sn / sn_weight - m.startup_seconds) : 0.0;
  } else {
    m.startup_seconds = sn / sn_weight;
  }

  // Jitter: what the multi-device runs waited beyond the modelled allreduces, as a share of
  // their compute.
  std::vector<Row> jitter;
  for (const MeasuredRun& r : runs) {
    if (r.config.devices < 2 || launched_eagerly(r)) continue;
    const double allreduce_s = static_cast<double>(r.config.epochs) * r.counts.syncs_per_epoch *
                               sync_seconds(r.counts, r.config.devices, m.alpha_seconds, m.beta_bytes_per_second);
    jitter.push_back({at(r.phases, Phase::kForward) + at(r.phases, Phase::kBackward), 0,
                      at(r.phases, Phase::kCommWait) - allreduce_s, r.wall_seconds > 0 ? 1.0 / r.wall_seconds : 1.0});
  }
  m.jitter_fraction = fit_one_nonnegative(jitter);

  // Launching from the host: what each eager run took beyond the graph runs' prices, per launch.
  std::vector<Row> eager;
  for (const MeasuredRun& r : runs) {
    if (!launched_eagerly(r)) continue;
    const double sync_s = sync_seconds(r.counts, r.config.devices, m.alpha_seconds, m.beta_bytes_per_second);
    const double modelled = sum(predict_phases(m, r.config, r.counts, sync_s));
    eager.push_back({static_cast<double>(r.counts.kernels), 0, r.wall_seconds - modelled,
                     r.wall_seconds > 0 ? 1.0 / r.wall_seconds : 1.0});
  }
  m.eager_seconds_per_kernel = fit_one_nonnegative(eager);
  return m;
}

double fixed_seconds_per_micro_batch(const ModelParameters& model, const WorkloadConfig& config,
                                     const WorkloadCounts& counts) {
  return model.fixed_seconds_per_step +
         (config.on_gpu ? static_cast<double>(counts.kernels_per_micro_batch) * model.seconds_per_kernel : 0.0);
}

nlohmann::json to_json(const ModelParameters& model) {
  nlohmann::json out = nlohmann::json::object();
  for (const JsonField& f : kModelFields) out[f.name] = model.*f.member;
  return out;
}

double number_field(const nlohmann::json& object, const std::string& key, const std::string& where) {
  const auto it = object.find(key);
  if (it == object.end()) throw DataError(fmt::format("{} has no \"{}\"", where, key));
  if (!it->is_number())
    throw DataError(fmt::format("{} field \"{}\" is {}, expected a number", where, key, it->dump()));
  const double value = it->get<double>();
  if (!std::isfinite(value)) throw DataError(fmt::format("{} field \"{}\" is not finite", where, key));
  return value;
}

ModelParameters model_from_json(const nlohmann::json& model) {
  if (!model.is_object()) throw DataError("\"model\" is not a JSON object");
  ModelParameters out;
  for (const JsonField& f : kModelFields) {
    if (!f.required && !model.contains(f.name)) continue;
    const double value = number_field(model, f.name, "\"model\"");
    if (value < 0) throw DataError(fmt::format("\"model\" field \"{}\" is {}, expected a number >= 0", f.name, value));
    out.*f.member = value;
  }
  return out;
}

std::vector<SweepPoint> batch_sweep(const ModelParameters& model, const WorkloadConfig& config, int devices) {
  return sweep(model, config, devices, 16, 65536, [](WorkloadConfig& c, int64_t b) { c.batch_size = b; });
}

std::vector<SweepPoint> width_sweep(const ModelParameters& model, const WorkloadConfig& config, int devices) {
  return sweep(model, config, devices, 16, 8192, [](WorkloadConfig& c, int64_t w) { c.hidden_size = w; });
}

std::optional<int64_t> break_even(const std::vector<SweepPoint>& sweep) {
  std::optional<int64_t> from;
  for (auto point = sweep.rbegin(); point != sweep.rend() && point->speedup > 1.0; ++point) from = point->value;
  return from;
}

std::optional<int64_t> smallest_batch_where_n_beats_one(const ModelParameters& model, const WorkloadConfig& config,
                                                        int devices) {
  return break_even(batch_sweep(model, config, devices));
}

std::optional<int64_t> smallest_width_where_n_beats_one(const ModelParameters& model, const WorkloadConfig& config,
                                                        int devices) {
  return break_even(width_sweep(model, config, devices));
}

}  // namespace ddp
