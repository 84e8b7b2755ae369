#include "doctor/run_noise.h"

#include <fmt/format.h>

namespace ddp {

std::optional<RunSample> sample_of(const RunRecord& run) {
  if (!run.ok) return std::nullopt;
  if (run.repeat_wall_seconds.size() >= 2) return RunSample{summarize(run.repeat_wall_seconds), "repeats"};
  if (run.summary.steady_epochs.count < 2 || run.wall_seconds <= 0) return std::nullopt;
  // An extrapolated wall keeps the relative error of the epochs it was extrapolated from.
  return RunSample{run_with_epoch_spread(run.wall_seconds, run.summary.steady_epochs), "epochs"};
}

std::optional<Effect> effect_against_baseline(const AblationResult& ablation) {
  if (ablation.baseline == nullptr) return std::nullopt;
  const std::optional<RunSample> baseline = sample_of(*ablation.baseline);
  const std::optional<RunSample> changed = sample_of(ablation.run);
  if (!baseline || !changed) return std::nullopt;
  return effect_of(baseline->sample, changed->sample);
}

double wall_change(const AblationResult& ablation) {
  return ablation.run.wall_seconds / ablation.baseline->wall_seconds - 1;
}

std::string describe_effect(const AblationResult& ablation) {
  if (const std::optional<Effect> effect = effect_against_baseline(ablation)) return describe(*effect);
  const RunRecord& baseline = *ablation.baseline;
  const RunRecord& without = sample_of(ablation.run) ? baseline : ablation.run;
  if (without.summary.epochs >= 3) {  // a summary without its epochs' spread (from before it was recorded)
    return fmt::format("{:+.1f} %, noise unknown: {} recorded no spread of its epochs", 100 * wall_change(ablation),
                       without.label);
  }
  return fmt::format("{:+.1f} %, noise unknown: {} ran {} epochs, too few for a spread (3 or more)",
                     100 * wall_change(ablation), without.label, without.summary.epochs);
}

AblationEffect ablation_effect(const AblationResult& ablation) {
  const std::optional<Effect> effect = effect_against_baseline(ablation);
  const std::optional<RunSample> baseline = sample_of(*ablation.baseline);
  AblationEffect out;
  out.relative = effect ? effect->relative : wall_change(ablation);
  if (effect) out.uncertainty = effect->uncertainty;
  out.measurable = effect && measurable(*effect);
  out.text = describe_effect(ablation);
  if (baseline) out.baseline_band = kNormal95 * baseline->sample.standard_error / baseline->sample.mean;
  return out;
}

}  // namespace ddp
