#pragma once
// The noise of the doctor's runs (the equations are noise.h's): a run's Sample comes from
// its baseline's repeats when `doctor --repeats N` ran it N times (the noise of repeating,
// start-up included), else from its own steady epochs (summary.json "steady_epochs"). A run
// of fewer than 3 epochs has neither: its noise is unknown, and so is any effect against it.
#include <optional>
#include <string>

#include "doctor/findings.h"
#include "doctor/noise.h"
#include "doctor/run_record.h"

namespace ddp {

struct RunSample {
  Sample sample;
  std::string source;  // "repeats" or "epochs"
};

// nullopt for a failed run or one without a spread.
std::optional<RunSample> sample_of(const RunRecord& run);

// The ablation's wall time against its baseline's; nullopt when either failed or has no sample.
std::optional<Effect> effect_against_baseline(const AblationResult& ablation);

// Both ran: the ablation's wall against its baseline's, m_a / m_b - 1, without a band.
double wall_change(const AblationResult& ablation);

// Both ran: describe() of the effect, or said plainly when the noise is unknown
// ("+2.8 %, noise unknown: devices=2 ran 2 epochs, too few for a spread (3 or more)").
std::string describe_effect(const AblationResult& ablation);

// What doctor.json and the report show of an ablation whose run and baseline both ran.
struct AblationEffect {
  double relative = 0;                // the effect's, else the walls' change
  std::optional<double> uncertainty;  // half-width of its 95 % band; none where the noise is unknown
  bool measurable = false;
  std::string text;                     // describe_effect's
  std::optional<double> baseline_band;  // the baseline's own ±, relative: the band around zero
};
AblationEffect ablation_effect(const AblationResult& ablation);

}  // namespace ddp
