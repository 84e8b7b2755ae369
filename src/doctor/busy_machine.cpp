#include "doctor/busy_machine.h"

#include <fmt/format.h>

#include <algorithm>

#include "ddpscope/error.h"

namespace ddp {

std::optional<double> others_share_of_cores(const RunSummary& s) {
  if (s.host_load.empty() || s.wall_seconds <= 0) return std::nullopt;
  double share = 0;
  for (const HostLoad& h : s.host_load) {
    if (h.cores > 0) share = std::max(share, h.others_core_seconds() / (h.cores * s.wall_seconds));
  }
  return share;
}

std::optional<std::string> busy_note(const RunRecord& run) {
  if (!run.ok) return std::nullopt;
  const RunSummary& s = run.summary;
  for (const HostLoad& h : s.host_load) {
    const double of_one_core = s.wall_seconds > 0 ? h.others_core_seconds() / s.wall_seconds : 0;
    if (of_one_core <= kBusyMinCoreShare || h.cores <= 0) continue;
    return fmt::format(
        "{}: other processes used {:.2f} core-seconds on {} while it trained, {:.0f} % of one core on "
        "average ({:.0f} % of its {} cores): its times are slower than a quiet machine gives, and "
        "predictions from them less sure (predict widens its band by that share)",
        run.label, h.others_core_seconds(), h.host, 100 * of_one_core, 100 * of_one_core / h.cores, h.cores);
  }
  return std::nullopt;
}

double busiest_share_of_cores(const nlohmann::json& doctor) {
  double busiest = 0;
  const auto runs = doctor.find("runs");
  if (runs == doctor.end() || !runs->is_array()) return busiest;
  for (const nlohmann::json& run : *runs) {
    if (!run.is_object() || !run.contains("summary")) continue;
    try {
      const RunSummary summary = nlohmann::ordered_json(run["summary"]).get<RunSummary>();
      busiest = std::max(busiest, others_share_of_cores(summary).value_or(0.0));
    } catch (const Error&) {
      // A summary this version cannot read measured nothing it can use.
    }
  }
  return busiest;
}

}  // namespace ddp
