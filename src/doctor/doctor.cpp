#include "doctor/doctor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>

#include "base/spawn.h"
#include "base/stop_signal.h"
#include "ddpscope/error.h"
#include "doctor/ablation.h"
#include "doctor/busy_machine.h"
#include "doctor/child_process.h"
#include "doctor/doctor_result.h"
#include "doctor/findings.h"
#include "doctor/interconnect.h"
#include "doctor/prediction_band.h"
#include "doctor/report_html.h"
#include "doctor/run_record.h"
#include "doctor/scaling_model.h"
#include "log/file_io.h"
#include "train/config/run_config.h"

namespace ddp {
namespace {

std::string label_for(int devices, const std::string& change = "") {
  return fmt::format("devices={}{}", devices, change.empty() ? "" : " " + change);
}

// Runs `ddpscope probe-allreduce` on `devices` ranks at the gradient's size and around it.
std::vector<AllreducePoint> probe(const std::string& exe, int devices, int64_t gradient_bytes,
                                  const std::filesystem::path& dir, std::string* error) {
  const std::vector<int64_t> sizes = {4, 4096, 65536, gradient_bytes, 4 * gradient_bytes};
  std::string list;
  for (int64_t s : sizes) list += (list.empty() ? "" : ",") + std::to_string(s);
  const ChildResult child = run_child({exe, "probe-allreduce", "--devices", std::to_string(devices), "--sizes", list},
                                      dir / "allreduce_probe.json", dir / "allreduce_probe.err");
  std::vector<AllreducePoint> points;
  if (child.exit_code != 0) {
    *error = fmt::format("the allreduce probe failed (exit code {}): {}", child.exit_code, child.stderr_text);
    return points;
  }
  std::ifstream in(dir / "allreduce_probe.json");
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.contains("points")) {
    *error = "the allreduce probe wrote no readable result";
    return points;
  }
  for (const auto& p : j["points"])
    points.push_back({p["ranks"].get<int>(), p["bytes"].get<double>(), p["seconds"].get<double>()});
  return points;
}

int64_t ablation_epochs(const RunRecord& baseline, const Config& changed, double target_seconds) {
  if (!baseline.ok) return std::min<int64_t>(3, changed.trainer.max_epochs);
  const double per_epoch = (baseline.wall_seconds - baseline.startup()) / baseline.epochs_full;
  const WorkloadConfig a = workload_for(baseline.config, baseline.devices);
  const WorkloadConfig b = workload_for(changed, baseline.devices);
  const double ratio = count_workload(b).training_flops_per_sample / count_workload(a).training_flops_per_sample;
  // Small batches run far below the GEMM peak: budget as if each sample cost more.
  const double small_batch = changed.data.batch_size < 64 ? 4.0 : 1.0;
  const double estimate = std::max(1e-6, per_epoch * ratio * small_batch);
  // 3 epochs at least, where the configuration has them: two steady epochs are a spread.
  return std::clamp<int64_t>(static_cast<int64_t>(target_seconds / estimate),
                             std::min<int64_t>(3, changed.trainer.max_epochs), changed.trainer.max_epochs);
}

// What a doctor will run: the configuration at each device count, then (doctor) each
// ablation at 1 device and at the largest count.
struct DoctorPlan {
  std::vector<int> devices;
  std::vector<Ablation> ablations;
  std::vector<int> ablation_devices;
};

DoctorPlan plan_doctor(const DoctorRequest& request) {
  DoctorPlan plan;
  plan.devices = request.devices;
  const int max_devices = request.devices.back();
  if (request.ablations) {
    plan.ablations = plan_ablations(request.config, max_devices);
    plan.ablation_devices = {1};
    if (max_devices > 1) plan.ablation_devices.push_back(max_devices);
  }
  return plan;
}

// An ablation's baseline again, until it ran `repeats` times: its Sample is then the noise
// of repeating (start-up included). A repeat that fails is said and left out.
void repeat_baseline(RunRecord& baseline, int repeats, const Config& base, const std::string& exe,
                     const std::filesystem::path& dir, std::FILE* out) {
  if (repeats < 2 || !baseline.ok) return;
  baseline.repeat_wall_seconds = {baseline.wall_seconds};
  for (int i = 2; i <= repeats && StopSignals::pending() == 0; ++i) {
    const std::string label = label_for(baseline.devices, fmt::format("repeat={}", i));
    std::fprintf(out, "running %s (%lld epochs)...\n", label.c_str(), static_cast<long long>(base.trainer.max_epochs));
    std::fflush(out);
    const RunRecord again = run_training(exe, base, baseline.devices, base.trainer.max_epochs, label, dir);
    if (again.ok) {
      baseline.repeat_wall_seconds.push_back(again.wall_seconds);
      std::fprintf(out, "  %.2f s\n", again.wall_seconds);
    } else {
      std::fprintf(out, "  failed: %s\n", again.error.c_str());
    }
  }
}

// Runs the plan's training runs in full (the ablations' baselines --repeats times), then its
// ablations for fewer epochs, printing progress.
void run_plan(const DoctorPlan& plan, const DoctorRequest& request, const std::string& exe, DoctorResult& result,
              std::FILE* out) {
  const Config& base = request.config;
  for (const int devices : plan.devices) {
    if (StopSignals::pending() != 0) return;
    std::fprintf(out, "running %s (%lld epochs)...\n", label_for(devices).c_str(),
                 static_cast<long long>(base.trainer.max_epochs));
    std::fflush(out);
    result.runs.push_back(run_training(exe, base, devices, base.trainer.max_epochs, label_for(devices), request.dir));
    const RunRecord& r = result.runs.back();
    if (r.ok)
      std::fprintf(out, "  %.2f s\n", r.wall_seconds);
    else
      std::fprintf(out, "  failed: %s\n", r.error.c_str());
    if (std::find(plan.ablation_devices.begin(), plan.ablation_devices.end(), devices) != plan.ablation_devices.end())
      repeat_baseline(result.runs.back(), request.repeats, base, exe, request.dir, out);
  }
  for (const Ablation& ablation : plan.ablations) {
    for (const int devices : plan.ablation_devices) {
      const RunRecord* baseline = result.run_at(devices);
      if (StopSignals::pending() != 0) return;
      if (baseline == nullptr || (devices == 1 && ablation.multi_device_only)) continue;
      Config changed = base;
      ablation.apply(changed);
      const int64_t epochs = ablation_epochs(*baseline, changed, request.ablation_seconds);
      const std::string label = label_for(devices, ablation.name);
      std::fprintf(out, "running %s (%lld epochs)...\n", label.c_str(), static_cast<long long>(epochs));
      std::fflush(out);
      AblationResult run{ablation.name,
                         ablation.habit,
                         ablation.fix,
                         ablation.phase,
                         run_training(exe, changed, devices, epochs, label, request.dir),
                         baseline};
      if (!run.run.ok) std::fprintf(out, "  failed: %s\n", run.run.error.c_str());
      result.ablations.push_back(std::move(run));
    }
  }
}

// The allreduce probe at the largest device count, and the scaling model fitted to every run
// that succeeded; what fails becomes a note.
void fit(const DoctorRequest& request, const std::string& exe, const WorkloadCounts& counts, DoctorResult& result) {
  const int max_devices = request.devices.back();
  if (max_devices > 1 && StopSignals::pending() == 0) {
    std::string error;
    const auto points = probe(exe, max_devices, counts.parameters * 4, request.dir, &error);
    if (!points.empty())
      result.allreduce = fit_allreduce(points);
    else
      result.notes.push_back(error);
  }
  std::vector<RunSummary> summaries;
  for (const RunRecord& r : result.runs) {
    if (r.ok) summaries.push_back(r.summary);
  }
  for (const AblationResult& a : result.ablations) {
    if (a.run.ok) summaries.push_back(a.run.summary);
  }
  if (summaries.empty()) return;
  try {
    result.model = fit_model(summaries, result.allreduce);
  } catch (const Error& e) {
    result.notes.push_back(std::string("the scaling model could not be fitted: ") + e.what());
  }
}

bool multi_device_measured(const DoctorResult& result) {
  const auto many = [](const RunRecord& r) { return r.ok && r.devices > 1; };
  return std::any_of(result.runs.begin(), result.runs.end(), many) ||
         std::any_of(result.ablations.begin(), result.ablations.end(),
                     [&](const AblationResult& a) { return many(a.run); });
}

PredictionRow prediction_row(const ModelParameters& model, const WorkloadConfig& w, const RunRecord* measured,
                             const std::string& ablation) {
  const Prediction p = predict(model, w);
  PredictionRow row;
  if (measured != nullptr) row.label = measured->label;
  if (!ablation.empty()) row.ablation = ablation;
  row.workload = w;
  row.predicted_wall_seconds = p.wall_seconds;
  row.predicted_speedup = p.speedup;
  if (measured != nullptr && measured->ok) row.measured_wall_seconds = measured->wall_seconds;
  return row;
}

// Each measured run next to its prediction, then other device counts and links. A measured
// run is named by its label (what its ablation changed), and its ablation kept apart, so
// that rows of one shape can be told apart.
std::vector<PredictionRow> predictions_of(const DoctorResult& result, const WorkloadConfig& workload,
                                          const std::vector<int>& measured_devices) {
  std::vector<PredictionRow> rows;
  const ModelParameters& model = *result.model;
  const bool many_measured = multi_device_measured(result);
  for (const RunRecord& r : result.runs) {
    // A run that failed is a prediction only where the model can price its devices.
    if (!r.ok && r.devices > 1 && !many_measured) continue;
    WorkloadConfig w = workload;
    w.devices = r.devices;
    rows.push_back(prediction_row(model, w, &r, ""));
  }
  for (const AblationResult& a : result.ablations) {
    if (!a.run.ok) continue;
    const WorkloadConfig w = workload_for(a.run.config, a.run.devices);
    WorkloadConfig baseline = workload;
    baseline.devices = a.run.devices;
    rows.push_back(prediction_row(model, w, &a.run, a.name));
    rows.back().modelled = w != baseline;
  }
  // Without a multi-device run the model has no price for communication: no other device count.
  if (!many_measured) return rows;
  // The measured link only where an allreduce was measured (not on one device, not on one GPU).
  const bool link_measured = model.beta_bytes_per_second > 0;
  for (const int devices : {3, 8, 64}) {
    for (const char* link : {"measured", "nvlink", "pcie", "infiniband", "10gbe"}) {
      const bool ran = std::find(measured_devices.begin(), measured_devices.end(), devices) != measured_devices.end();
      if (std::string(link) == "measured" && (ran || !link_measured)) continue;
      WorkloadConfig w = workload;
      w.devices = devices;
      w.interconnect = link;
      rows.push_back(prediction_row(model, w, nullptr, ""));
    }
  }
  return rows;
}

// Each prediction of a configuration that did not run carries its band, as predict's does.
void add_bands(DoctorResult& result) {
  const std::vector<MeasuredPoint> measured = measured_points(result.predictions);
  if (measured.empty()) return;
  // Runs on a busy machine, or with more ranks than a machine's cores, priced the work too dear.
  double busy = 0;
  for (const RunRecord& r : result.runs) busy = std::max(busy, others_share_of_cores(r.summary).value_or(0.0));
  const double shared = most_ranks_without_a_core(result.runs);
  for (PredictionRow& p : result.predictions) {
    if (!p.measured_wall_seconds) p.band = prediction_band(measured, p.workload).relative + busy + shared;
  }
}

// A doctor whose runs failed has measured less than it says: its files keep what ran, and it
// exits non-zero naming the first failure.
std::vector<const RunRecord*> all_runs(const DoctorResult& result) {
  std::vector<const RunRecord*> all;
  for (const RunRecord& r : result.runs) all.push_back(&r);
  for (const AblationResult& a : result.ablations) all.push_back(&a.run);
  return all;
}

std::size_t count_runs(const DoctorResult& result, bool failed) {
  const std::vector<const RunRecord*> all = all_runs(result);
  return std::count_if(all.begin(), all.end(), [&](const RunRecord* r) { return r->ok != failed; });
}

void throw_if_runs_failed(const DoctorResult& result, const std::filesystem::path& json_path) {
  const std::vector<const RunRecord*> all = all_runs(result);
  const auto first = std::find_if(all.begin(), all.end(), [](const RunRecord* r) { return !r->ok; });
  if (first == all.end()) return;
  throw Error(ExitCode::kOther,
              fmt::format("{} of {} runs failed (the first, {}: {}); {} keeps what the others measured",
                          count_runs(result, true), all.size(), (*first)->label, (*first)->error, json_path.string()));
}

}  // namespace

DoctorResult diagnose(const DoctorRequest& request, std::FILE* out) {
  const std::string exe = own_executable();
  DoctorResult result;
  result.ablations_run = request.ablations;
  result.config = request.config;
  result.notes = request.notes;
  if (request.ablations && request.repeats > 1) {
    result.notes.push_back(fmt::format(
        "Each ablation's baseline ran {} times (--repeats): its noise is the spread of those runs, start-up included.",
        request.repeats));
  }
  result.command = request.command;

  run_plan(plan_doctor(request), request, exe, result, out);
  if (const int signal = StopSignals::pending()) {
    result.notes.push_back(fmt::format("Stopped by {}: the runs after it were not started; what is here is what ran.",
                                       signal_name(signal)));
  }
  for (const RunRecord& r : result.runs) {
    if (const std::optional<std::string> note = busy_note(r)) result.notes.push_back(*note);
    if (const std::optional<std::string> note = shared_cores_note(r)) result.notes.push_back(*note);
  }
  result.size_speedups = size_speedups(result.ablations, result.runs);
  const WorkloadConfig workload = workload_for(request.config, request.devices.back());
  fit(request, exe, count_workload(workload), result);
  if (result.model) {
    if (request.devices.back() > 1 && !multi_device_measured(result)) {
      result.notes.push_back(
          "No multi-device run succeeded: the model has no price for communication (its launch, jitter and link "
          "are not measured), and it predicts no other device count; predict refuses to (exit 3).");
    }
    result.predictions = predictions_of(result, workload, request.devices);
    add_bands(result);
    std::vector<const RunRecord*> device_runs;
    for (const RunRecord& r : result.runs) device_runs.push_back(&r);
    result.findings = find_problems({device_runs, result.ablations, *result.model, workload});
  }
  return result;
}

nlohmann::ordered_json run_doctor(const DoctorRequest& request, std::FILE* out) {
  // A first Ctrl-C stops the run in progress (it is handed on) and starts no other; a second
  // ends the doctor at once.
  const StopSignals signals;
  const DoctorResult result = diagnose(request, out);
  const nlohmann::ordered_json doc = to_json(result);
  const std::filesystem::path json_path = request.dir / (request.ablations ? "doctor.json" : "compare.json");
  write_file_atomically(json_path, doc.dump(2) + "\n");
  write_file_atomically(request.dir / "report.html", render_report_html(result));
  print(result, out);
  std::fprintf(out, "\nWrote %s and %s\n", json_path.c_str(), (request.dir / "report.html").c_str());
  if (const int signal = StopSignals::pending()) {
    throw StopRequested(signal,
                        fmt::format("stopped by {}; {} and report.html keep what ran before it ({} finished runs)",
                                    signal_name(signal), json_path.string(), count_runs(result, false)));
  }
  throw_if_runs_failed(result, json_path);
  return doc;
}

}  // namespace ddp
