#pragma once
// report.html: one self-contained page over a doctor's, compare's or analyze's result — the
// question and setup, speedup, phases, device utilization, ablations, findings, predictions and
// the commands to reproduce. Inline CSS and static SVG only, so it opens without a network and
// prints as it looks.
#include <string>

#include "doctor/report_view.h"

namespace ddp {

// The page of a view: formatting only (numbers into labels, escaping, chart geometry).
std::string render_report_html(const ReportView& view);

// The page of a result (build_report_view). Every string from it is escaped.
std::string render_report_html(const DoctorResult& result);

}  // namespace ddp
