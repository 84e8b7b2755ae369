#pragma once
// report.html (DESIGN §2, §5): one self-contained page over doctor.json or compare.json —
// the question and setup, speedup, phases, device utilization, ablations, findings,
// predictions and the commands to reproduce. Inline CSS and static SVG only, so it opens
// without a network and prints as it looks.
#include <nlohmann/json.hpp>

#include <string>

namespace ddp {

// `doctor` is a ddpscope.doctor/1 object, or a compare.json (no "ablations", "findings").
// Every string from it is escaped; a missing or mistyped field is shown as absent, never thrown.
std::string render_report_html(const nlohmann::ordered_json& doctor);
std::string render_report_html(const nlohmann::json& doctor);

}  // namespace ddp
