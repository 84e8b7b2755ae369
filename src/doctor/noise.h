#pragma once
// The doctor's noise, stated: an ablation's effect on wall time relative to the baseline,
// with a band that the noise of a shared machine could explain.
//
// A Sample is a mean m and its standard error s = sd / sqrt(n), sd with n - 1, from either
//   - repeated runs' wall seconds, or
//   - one run: wall W with the spread of its n epoch times e_i, s = W * se(e) / mean(e)
//     (a run's relative error is its mean epoch's, when epochs vary independently).
// The effect of ablation a against baseline b, the ratio of means with errors in quadrature:
//   relative    = m_a / m_b - 1
//   uncertainty = 1.96 * (m_a / m_b) * sqrt((s_a / m_a)^2 + (s_b / m_b)^2)
// 1.96 is the normal 95 % quantile; with a handful of repeats the true band is wider
// (Student's t with 2 degrees of freedom is 4.30), so "measurable" is a floor, not a proof.
#include <span>
#include <string>

#include "train/records/epoch_spread.h"

namespace ddp {

inline constexpr double kNormal95 = 1.96;  // the band's half-width in standard errors

struct Sample {
  double mean = 0;
  double standard_error = 0;
};

// Two values or more, every one finite and positive (checked: the doctor's own samples).
Sample summarize(std::span<const double> values);

// One run of `wall_seconds` whose epochs took `epoch_seconds` (two or more, checked).
Sample run_with_epoch_spread(double wall_seconds, std::span<const double> epoch_seconds);
// The same from a summary.json's steady epochs (count two or more, checked): se = sd / sqrt(n).
Sample run_with_epoch_spread(double wall_seconds, const EpochSpread& epochs);

struct Effect {
  double relative = 0;     // -0.028: 2.8 % less time than the baseline
  double uncertainty = 0;  // half-width of the band, in the same units
};

Effect effect_of(const Sample& baseline, const Sample& ablation);
inline Effect effect_of(std::span<const double> baseline, std::span<const double> ablation) {
  return effect_of(summarize(baseline), summarize(ablation));
}

// Outside the band: |relative| > uncertainty.
bool measurable(const Effect& effect);

// "no measurable effect (±2.1 %)", "12.3 % slower (±2.1 %)" or "8.0 % faster (±2.1 %)".
std::string describe(const Effect& effect);

}  // namespace ddp
