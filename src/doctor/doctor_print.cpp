// The terminal's version of a DoctorResult: what a user reads when compare or doctor ends.
#include <fmt/format.h>

#include <algorithm>

#include "doctor/ablation.h"
#include "doctor/doctor_result.h"
#include "doctor/prediction_band.h"
#include "doctor/run_noise.h"

namespace ddp {
namespace {

void print_compare_table(std::FILE* out, const std::vector<RunRecord>& runs) {
  const double one = runs.front().ok && runs.front().devices == 1 ? runs.front().wall_seconds : 0;
  std::fprintf(out,
               "\n%-8s %9s %11s %8s %10s %7s | per micro-batch, ms (rank spread): forward backward comm_wait data | "
               "per epoch, ms: validation\n",
               "devices", "wall s", "samples/s", "speedup", "efficiency", "steps");
  for (const RunRecord& r : runs) {
    if (!r.ok) {
      std::fprintf(out, "%-8d %9s  (why: below the table)\n", r.devices, "failed");
      continue;
    }
    const RunSummary& s = r.summary;
    const WorkloadCounts counts = count_workload(workload_from_summary(s));
    const double micro_batches = static_cast<double>(counts.micro_batches_per_epoch * s.epochs);
    const PhaseSeconds mean = s.mean_phases();
    auto per = [&](Phase phase, double count) {
      const auto p = static_cast<std::size_t>(phase);
      double lo = 1e300, hi = 0;
      for (const PhaseSeconds& rank : s.phases_per_rank) {
        lo = std::min(lo, rank[p]);
        hi = std::max(hi, rank[p]);
      }
      return fmt::format("{:.3f}({:.0f}%)", 1e3 * mean[p] / count, hi > 0 ? 100.0 * (hi - lo) / hi : 0.0);
    };
    const double speedup = one > 0 ? one / r.wall_seconds : 0;
    std::fprintf(out, "%-8d %9.2f %11.0f %8.2f %9.0f%% %7lld | %s %s %s %s | %s\n", r.devices, r.wall_seconds,
                 s.samples_per_second(), speedup, 100.0 * speedup / r.devices,
                 static_cast<long long>(s.optimizer_steps), per(Phase::kForward, micro_batches).c_str(),
                 per(Phase::kBackward, micro_batches).c_str(), per(Phase::kCommWait, micro_batches).c_str(),
                 per(Phase::kData, micro_batches).c_str(),
                 per(Phase::kValidation, std::max<double>(1, static_cast<double>(s.epochs))).c_str());
  }
  // A failure's message is as long as it is: under the table, not in a row of it.
  for (const RunRecord& r : runs) {
    if (!r.ok) std::fprintf(out, "%s failed: %s\n", r.label.c_str(), r.error.c_str());
  }
  const bool devices_differ = std::any_of(
      runs.begin(), runs.end(), [&](const RunRecord& r) { return r.ok && r.devices != runs.front().devices; });
  if (devices_differ) {
    // Lightning's batch_size is per device (docs/scaling-guide.md, per-device batch semantics).
    std::fprintf(out,
                 "The batch size is per device: at N devices a step takes N x the samples, so compare samples/s "
                 "(or wall), not seconds per iteration.\n");
  }
}

void print_ablations(std::FILE* out, const std::vector<AblationResult>& ablations,
                     const std::vector<SizeSpeedup>& sizes) {
  std::fprintf(out,
               "\nAblations (epochs reduced and extrapolated from the steady per-epoch time where marked *; the "
               "effect with its 95 %% band of noise):\n");
  for (const AblationResult& a : ablations) {
    // A size changes the work: its wall against the baseline is shown as N devices against one below.
    if (changes_work(a.name) &&
        std::any_of(sizes.begin(), sizes.end(), [&](const SizeSpeedup& s) { return s.name == a.name; })) {
      continue;
    }
    if (!a.run.ok || !a.baseline->ok) {
      const std::string& error = a.run.ok ? std::string("its baseline run failed") : a.run.error;
      std::fprintf(out, "  %-34s failed: %s\n", a.run.label.c_str(), error.c_str());
      continue;
    }
    std::fprintf(out, "  %-34s %8.2f s%s  vs %8.2f s  %s\n", a.run.label.c_str(), a.run.wall_seconds,
                 a.run.extrapolated ? "*" : " ", a.baseline->wall_seconds, describe_effect(a).c_str());
  }
}

void print_model(std::FILE* out, const ModelParameters& model, const std::vector<PredictionRow>& predictions) {
  std::fprintf(
      out, "\nModel: %.0f GFLOP/s training, allreduce alpha %.1f us, beta %.2f GB/s, jitter %.1f %%, launch %.2f s\n",
      model.flops_per_second / 1e9, model.alpha_seconds * 1e6, model.beta_bytes_per_second / 1e9,
      100 * model.jitter_fraction, model.launch_seconds);
  std::fprintf(out, "Predicted vs measured:\n");
  for (const PredictionRow& p : predictions) {
    if (!p.measured_wall_seconds) continue;
    std::fprintf(out, "  %-34s predicted %8.2f s, measured %8.2f s (%+.1f %%%s)\n", (*p.label + ":").c_str(),
                 p.predicted_wall_seconds, *p.measured_wall_seconds, 100 * *p.error(),
                 p.modelled ? "" : ": a change the model does not see");
  }
  // Rows without a measurement: other device counts and links, and measured runs that failed.
  if (std::all_of(predictions.begin(), predictions.end(),
                  [](const PredictionRow& p) { return p.measured_wall_seconds.has_value(); })) {
    return;
  }
  std::fprintf(out,
               "Predicted for other device counts and links (speedup over 1 device; the band: the model's error "
               "on the nearest of these runs, at least %.0f %%, plus %.0f %% per e-fold from them and what other "
               "processes took):\n",
               100 * kBandFloor, 100 * kBandPerEFold);
  for (const PredictionRow& p : predictions) {
    if (p.measured_wall_seconds) continue;
    const std::string band = p.band ? fmt::format(" ± {:.0f} %", 100 * *p.band) : std::string();
    std::fprintf(out, "  %3d devices, %-10s %8.2f s%s  (%.2fx)\n", p.workload.devices, p.workload.interconnect.c_str(),
                 p.predicted_wall_seconds, band.c_str(), p.predicted_speedup);
  }
}

}  // namespace

std::string findings_text(const std::vector<Finding>& findings) {
  std::string out = "\nFindings, largest cost first:\n";
  if (findings.empty()) out += "  none above the thresholds (docs/scaling-guide.md)\n";
  int i = 1;
  for (const Finding& f : findings) {
    out += fmt::format("{}. {}\n", i++, f.title);
    if (!f.detail.empty()) out += fmt::format("   {}\n", f.detail);
    if (!f.fix.empty()) out += fmt::format("   Fix: {}\n", f.fix);
  }
  return out;
}

std::string notes_text(const std::vector<std::string>& notes) {
  std::string out;
  for (const std::string& note : notes) out += fmt::format("Note: {}\n", note);
  return out;
}

void print(const DoctorResult& result, std::FILE* out) {
  print_compare_table(out, result.runs);
  if (result.ablations_run) {
    print_ablations(out, result.ablations, result.size_speedups);
    if (!result.size_speedups.empty()) {
      std::fprintf(out, "\nThe sizes tried: do N devices beat one there?\n");
      for (const SizeSpeedup& s : result.size_speedups) std::fprintf(out, "  %s\n", describe(s).c_str());
    }
  }
  if (result.model) print_model(out, *result.model, result.predictions);
  if (result.ablations_run) std::fputs(findings_text(result.findings).c_str(), out);
  std::fputs(notes_text(result.notes).c_str(), out);
}

}  // namespace ddp
