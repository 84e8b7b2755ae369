#include "doctor/doctor.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>

#include "base/error.h"
#include "doctor/ablation.h"
#include "doctor/child_process.h"
#include "doctor/findings.h"
#include "doctor/interconnect.h"
#include "doctor/report_html.h"
#include "doctor/run_record.h"
#include "doctor/scaling_model.h"
#include "log/file_io.h"
#include "train/options.h"
#include "train/run_stats.h"

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
  for (const auto& p : j["points"]) points.push_back({p["ranks"].get<int>(), p["bytes"].get<double>(), p["seconds"].get<double>()});
  return points;
}

int64_t ablation_epochs(const RunRecord& baseline, const Config& changed, double target_seconds) {
  if (!baseline.ok) return std::min<int64_t>(3, changed.trainer.max_epochs);
  const double per_epoch = (baseline.wall_seconds - baseline.startup()) / baseline.epochs_full;
  WorkloadConfig a = workload_from_config(config_json(resolved_options(baseline.config)), baseline.devices);
  WorkloadConfig b = workload_from_config(config_json(resolved_options(changed)), baseline.devices);
  const double ratio = count_workload(b).training_flops_per_sample / count_workload(a).training_flops_per_sample;
  // Small batches run far below the GEMM peak: budget as if each sample cost more.
  const double small_batch = changed.data.batch_size < 64 ? 4.0 : 1.0;
  const double estimate = std::max(1e-6, per_epoch * ratio * small_batch);
  return std::clamp<int64_t>(static_cast<int64_t>(target_seconds / estimate), 2, changed.trainer.max_epochs);
}

nlohmann::ordered_json run_json(const RunRecord& run) {
  nlohmann::ordered_json j = {{"label", run.label}, {"devices", run.devices}, {"command", run.command},
                              {"epochs_run", run.epochs_run}, {"epochs", run.epochs_full},
                              {"extrapolated", run.extrapolated}, {"ok", run.ok}};
  if (!run.ok) {
    j["error"] = run.error;
    return j;
  }
  j["wall_seconds"] = run.wall_seconds;
  j["summary"] = run.summary;
  nlohmann::ordered_json utilization = nlohmann::ordered_json::array();
  if (run.summary.contains("utilization_per_rank")) {
    int device = 0;
    for (const auto& series : run.summary["utilization_per_rank"]) {
      utilization.push_back({{"device", device++}, {"points", series}});
    }
  }
  j["utilization"] = utilization;
  return j;
}

void print_compare_table(std::FILE* out, const std::vector<RunRecord>& runs) {
  const double one = runs.front().ok && runs.front().devices == 1 ? runs.front().wall_seconds : 0;
  std::fprintf(out, "\n%-8s %9s %11s %8s %10s %7s | per micro-batch, ms (rank spread): forward backward comm_wait data | per epoch, ms: validation\n",
               "devices", "wall s", "samples/s", "speedup", "efficiency", "steps");
  for (const RunRecord& r : runs) {
    if (!r.ok) {
      std::fprintf(out, "%-8d failed: %s\n", r.devices, r.error.c_str());
      continue;
    }
    const auto& s = r.summary;
    const WorkloadCounts counts = count_workload(workload_from_summary(s));
    const double micro_batches = static_cast<double>(counts.micro_batches_per_epoch * s["epochs"].get<int64_t>());
    auto per = [&](const char* phase, double count) {
      double lo = 1e300, hi = 0;
      for (const auto& rank : s["phases_per_rank"]) {
        lo = std::min(lo, rank[phase].get<double>());
        hi = std::max(hi, rank[phase].get<double>());
      }
      return fmt::format("{:.3f}({:.0f}%)", 1e3 * s["phases"][phase].get<double>() / count,
                         hi > 0 ? 100.0 * (hi - lo) / hi : 0.0);
    };
    const double speedup = one > 0 ? one / r.wall_seconds : 0;
    std::fprintf(out, "%-8d %9.2f %11.0f %8.2f %9.0f%% %7lld | %s %s %s %s | %s\n", r.devices, r.wall_seconds,
                 s["samples_per_second"].get<double>(), speedup, 100.0 * speedup / r.devices,
                 static_cast<long long>(s["optimizer_steps"].get<int64_t>()), per("forward", micro_batches).c_str(),
                 per("backward", micro_batches).c_str(), per("comm_wait", micro_batches).c_str(),
                 per("data", micro_batches).c_str(), per("validation", std::max<double>(1, s["epochs"].get<double>())).c_str());
  }
}

}  // namespace

nlohmann::ordered_json run_doctor(const DoctorRequest& request, std::FILE* out) {
  const std::string exe = own_executable();
  const Config& base = request.config;
  const int max_devices = request.devices.back();

  // 1. The configuration at each device count, in full.
  std::vector<RunRecord> runs;
  for (const int devices : request.devices) {
    std::fprintf(out, "running %s (%lld epochs)...\n", label_for(devices).c_str(), static_cast<long long>(base.trainer.max_epochs));
    std::fflush(out);
    runs.push_back(run_training(exe, base, devices, base.trainer.max_epochs, label_for(devices), request.dir));
    const RunRecord& r = runs.back();
    if (r.ok) std::fprintf(out, "  %.2f s\n", r.wall_seconds);
    else std::fprintf(out, "  failed: %s\n", r.error.c_str());
  }
  auto baseline_at = [&](int devices) -> const RunRecord* {
    for (const RunRecord& r : runs) {
      if (r.devices == devices) return &r;
    }
    return nullptr;
  };

  // 2. The ablations, at 1 device and at the largest count, for fewer epochs.
  std::vector<AblationResult> ablations;
  if (request.ablations) {
    std::vector<int> counts = {1};
    if (max_devices > 1) counts.push_back(max_devices);
    for (const Ablation& ablation : plan_ablations(base, max_devices)) {
      for (const int devices : counts) {
        const RunRecord* baseline = baseline_at(devices);
        if (baseline == nullptr || (devices == 1 && ablation.multi_device_only)) continue;
        Config changed = base;
        ablation.apply(changed);
        const int64_t epochs = ablation_epochs(*baseline, changed, request.ablation_seconds);
        const std::string label = label_for(devices, ablation.name);
        std::fprintf(out, "running %s (%lld epochs)...\n", label.c_str(), static_cast<long long>(epochs));
        std::fflush(out);
        AblationResult result{ablation.name, ablation.habit, ablation.fix, ablation.phase,
                              run_training(exe, changed, devices, epochs, label, request.dir), baseline};
        if (!result.run.ok) std::fprintf(out, "  failed: %s\n", result.run.error.c_str());
        ablations.push_back(std::move(result));
      }
    }
  }

  // 3. The allreduce probe and the model.
  std::vector<std::string> notes = request.notes;
  WorkloadConfig workload = workload_from_config(config_json(resolved_options(base)), max_devices);
  const WorkloadCounts counts = count_workload(workload);
  AllreduceFit allreduce;
  nlohmann::ordered_json probe_json = nlohmann::ordered_json::array();
  if (max_devices > 1) {
    std::string error;
    const auto points = probe(exe, max_devices, counts.parameters * 4, request.dir, &error);
    if (!points.empty()) {
      allreduce = fit_allreduce(points);
      for (const auto& row : allreduce.rows) {
        probe_json.push_back({{"ranks", row.point.ranks}, {"bytes", row.point.bytes}, {"seconds", row.point.seconds},
                              {"model_seconds", row.model_seconds}, {"algbw_bytes_per_second", row.algbw_bytes_per_second},
                              {"busbw_bytes_per_second", row.busbw_bytes_per_second}});
      }
    } else {
      notes.push_back(error);
    }
  }
  std::vector<nlohmann::json> summaries;
  for (const RunRecord& r : runs) {
    if (r.ok) summaries.push_back(r.summary);
  }
  for (const AblationResult& a : ablations) {
    if (a.run.ok) summaries.push_back(a.run.summary);
  }
  ModelParameters model;
  bool have_model = false;
  if (!summaries.empty()) {
    try {
      model = fit_model(summaries, allreduce);
      have_model = true;
    } catch (const Error& e) {
      notes.push_back(std::string("the scaling model could not be fitted: ") + e.what());
    }
  }

  // 4. Predictions: each measured run next to its prediction, then other device counts and links.
  nlohmann::ordered_json predictions = nlohmann::ordered_json::array();
  if (have_model) {
    // A measured run is named by its label (what its ablation changed), and its ablation kept
    // apart, so that rows of one shape can be told apart.
    auto add = [&](WorkloadConfig w, const RunRecord* measured, const std::string& ablation) {
      const Prediction p = predict(model, w);
      nlohmann::ordered_json j = {{"label", measured != nullptr ? nlohmann::ordered_json(measured->label) : nullptr},
                                  {"ablation", ablation.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(ablation)},
                                  {"devices", w.devices}, {"interconnect", w.interconnect}, {"batch_size", w.batch_size},
                                  {"hidden_size", w.hidden_size}, {"hidden_layers", w.hidden_layers},
                                  {"predicted_wall_seconds", p.wall_seconds}, {"predicted_speedup", p.speedup}};
      if (measured != nullptr && measured->ok) {
        j["measured_wall_seconds"] = measured->wall_seconds;
        j["error"] = (p.wall_seconds - measured->wall_seconds) / measured->wall_seconds;
      } else {
        j["measured_wall_seconds"] = nullptr;
        j["error"] = nullptr;
      }
      predictions.push_back(std::move(j));
    };
    for (const RunRecord& r : runs) {
      WorkloadConfig w = workload;
      w.devices = r.devices;
      add(w, &r, "");
    }
    for (const AblationResult& a : ablations) {
      if (!a.run.ok) continue;
      WorkloadConfig w = workload_from_config(config_json(resolved_options(a.run.config)), a.run.devices);
      w.devices = a.run.devices;
      add(w, &a.run, a.name);
    }
    for (const int devices : {3, 8, 64}) {
      for (const char* link : {"measured", "nvlink", "pcie", "infiniband", "10gbe"}) {
        if (std::find(request.devices.begin(), request.devices.end(), devices) != request.devices.end() &&
            std::string(link) == "measured") {
          continue;
        }
        WorkloadConfig w = workload;
        w.devices = devices;
        w.interconnect = link;
        add(w, nullptr, "");
      }
    }
  }

  // 5. Findings.
  std::vector<const RunRecord*> device_runs;
  for (const RunRecord& r : runs) device_runs.push_back(&r);
  std::vector<Finding> findings;
  if (have_model) findings = find_problems({device_runs, ablations, model, workload});

  // 6. doctor.json / compare.json, and the report.
  nlohmann::ordered_json doc;
  doc["schema"] = request.ablations ? "ddpscope.doctor/1" : "ddpscope.compare/1";
  doc["version"] = DDPSCOPE_VERSION;
  doc["config"] = config_json(resolved_options(base));
  doc["notes"] = notes;
  nlohmann::ordered_json commands = nlohmann::ordered_json::array({request.command});
  for (const RunRecord& r : runs) commands.push_back(r.command);
  doc["commands"] = commands;
  doc["runs"] = nlohmann::ordered_json::array();
  for (const RunRecord& r : runs) doc["runs"].push_back(run_json(r));
  nlohmann::ordered_json speedup = nlohmann::ordered_json::object();
  const RunRecord* one = baseline_at(1);
  for (const RunRecord& r : runs) {
    if (one != nullptr && one->ok && r.ok) speedup[std::to_string(r.devices)] = one->wall_seconds / r.wall_seconds;
  }
  doc["speedup"] = speedup;
  doc["model"] = have_model ? nlohmann::ordered_json(to_json(model)) : nlohmann::ordered_json(nullptr);
  doc["allreduce_probe"] = probe_json;
  doc["predictions"] = predictions;
  if (request.ablations) {
    doc["ablations"] = nlohmann::ordered_json::array();
    for (const AblationResult& a : ablations) {
      nlohmann::ordered_json j = {{"name", a.name}, {"devices", a.run.devices}, {"label", a.run.label}, {"ok", a.run.ok},
                                  {"epochs_run", a.run.epochs_run}, {"extrapolated", a.run.extrapolated},
                                  {"command", a.run.command}};
      if (a.run.ok && a.baseline->ok) {
        j["wall_seconds"] = a.run.wall_seconds;
        j["baseline_wall_seconds"] = a.baseline->wall_seconds;
        j["cost_seconds_per_step"] =
            (a.run.wall_seconds - a.baseline->wall_seconds) / std::max<int64_t>(1, a.baseline->optimizer_steps());
      } else {
        j["error"] = a.run.ok ? "its baseline run failed" : a.run.error;
      }
      doc["ablations"].push_back(std::move(j));
    }
    doc["findings"] = nlohmann::ordered_json::array();
    for (const Finding& f : findings) doc["findings"].push_back(to_json(f));
    doc["runs_ablations"] = nlohmann::ordered_json::array();
    for (const AblationResult& a : ablations) doc["runs_ablations"].push_back(run_json(a.run));
  }
  const std::string name = request.ablations ? "doctor.json" : "compare.json";
  write_file_atomically(request.dir / name, doc.dump(2) + "\n");
  write_file_atomically(request.dir / "report.html", render_report_html(doc));

  // 7. The terminal's version.
  print_compare_table(out, runs);
  if (request.ablations) {
    std::fprintf(out, "\nAblations (epochs reduced and extrapolated from the steady per-epoch time where marked *):\n");
    for (const auto& a : doc["ablations"]) {
      if (!a.contains("wall_seconds")) {
        std::fprintf(out, "  %-34s failed: %s\n", a["label"].get<std::string>().c_str(), a["error"].get<std::string>().c_str());
        continue;
      }
      const double wall = a["wall_seconds"], base_wall = a["baseline_wall_seconds"];
      std::fprintf(out, "  %-34s %8.2f s%s  vs %8.2f s  (%+.1f %%)\n", a["label"].get<std::string>().c_str(), wall,
                   a["extrapolated"].get<bool>() ? "*" : " ", base_wall, 100.0 * (wall - base_wall) / base_wall);
    }
  }
  if (have_model) {
    std::fprintf(out, "\nModel: %.0f GFLOP/s training, allreduce alpha %.1f us, beta %.2f GB/s, jitter %.1f %%, launch %.2f s\n",
                 model.flops_per_second / 1e9, model.alpha_seconds * 1e6, model.beta_bytes_per_second / 1e9,
                 100 * model.jitter_fraction, model.launch_seconds);
    std::fprintf(out, "Predicted vs measured:\n");
    for (const auto& p : predictions) {
      if (p["measured_wall_seconds"].is_null()) continue;
      std::fprintf(out, "  %-34s predicted %8.2f s, measured %8.2f s (%+.1f %%)\n",
                   (p["label"].get<std::string>() + ":").c_str(), p["predicted_wall_seconds"].get<double>(),
                   p["measured_wall_seconds"].get<double>(), 100 * p["error"].get<double>());
    }
    std::fprintf(out, "Predicted for other device counts and links (speedup over 1 device):\n");
    for (const auto& p : predictions) {
      if (!p["measured_wall_seconds"].is_null()) continue;
      std::fprintf(out, "  %3d devices, %-10s %8.2f s  (%.2fx)\n", p["devices"].get<int>(),
                   p["interconnect"].get<std::string>().c_str(), p["predicted_wall_seconds"].get<double>(),
                   p["predicted_speedup"].get<double>());
    }
  }
  if (request.ablations) {
    std::fprintf(out, "\nFindings, largest cost first:\n");
    if (findings.empty()) std::fprintf(out, "  none above the thresholds (docs/scaling-guide.md)\n");
    int i = 1;
    for (const Finding& f : findings) {
      std::fprintf(out, "%d. %s\n   %s\n   Fix: %s\n", i++, f.title.c_str(), f.detail.c_str(), f.fix.c_str());
    }
  }
  for (const std::string& note : notes) std::fprintf(out, "Note: %s\n", note.c_str());
  std::fprintf(out, "\nWrote %s and %s\n", (request.dir / name).c_str(), (request.dir / "report.html").c_str());
  return doc;
}

}  // namespace ddp
