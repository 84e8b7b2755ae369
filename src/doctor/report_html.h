#pragma once
// report.html: one self-contained page over doctor.json or compare.json —
// the question and setup, speedup, phases, device utilization, ablations, findings,
// predictions and the commands to reproduce. Inline CSS and static SVG only, so it opens
// without a network and prints as it looks.
#include <nlohmann/json.hpp>

#include <string>

#include "doctor/report_view.h"

namespace ddp {

// The page of a view: formatting only (numbers into labels, escaping, chart geometry).
std::string render_report_html(const ReportView& view);

// `doctor` is a ddpscope.doctor/1 object, or a compare.json (no "ablations", "findings"), read
// by build_report_view. Every string from it is escaped; a missing or mistyped field is shown
// as absent, never thrown.
std::string render_report_html(const nlohmann::ordered_json& doctor);
std::string render_report_html(const nlohmann::json& doctor);

}  // namespace ddp
