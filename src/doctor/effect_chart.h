#pragma once
// The report's chart of ablation effects: per ablation its change in wall time against its
// baseline with an error bar (its 95 % band, run_noise.h), over a shaded band around zero of
// the baseline's own ± (what the baseline's noise alone could move), so that an effect whose
// bar reaches into the band reads at a glance as "no measurable effect".
#include <string>
#include <vector>

#include "doctor/report_view.h"

namespace ddp {

// A <figure id="effect-chart"> with its legend; empty when no ablation has an effect.
std::string ablation_effect_chart(const std::vector<AblationRow>& ablations);

}  // namespace ddp
