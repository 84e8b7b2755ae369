#include "doctor/busy_machine.h"

#include <fmt/format.h>

#include <algorithm>

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

double busiest_share_of_cores(const std::vector<RunRecord>& runs) {
  double busiest = 0;
  for (const RunRecord& run : runs) {
    if (run.ok) busiest = std::max(busiest, others_share_of_cores(run.summary).value_or(0.0));
  }
  return busiest;
}

double ranks_without_a_core_share(const RunSummary& s) {
  double share = 0;
  for (const HostLoad& h : s.host_load) {
    if (h.cores > 0 && h.ranks > h.cores) share = std::max(share, static_cast<double>(h.ranks - h.cores) / h.ranks);
  }
  return share;
}

std::optional<std::string> shared_cores_note(const RunRecord& run) {
  if (!run.ok) return std::nullopt;
  for (const HostLoad& h : run.summary.host_load) {
    if (h.cores <= 0 || h.ranks <= h.cores) continue;
    return fmt::format(
        "{}: its {} ranks on {} shared {} cores, so each computed slower than on a core of its own: its times are "
        "slower than a machine with a core per rank gives, and predictions from them less sure (predict widens its "
        "band by the share of ranks without a core, {:.0f} %)",
        run.label, h.ranks, h.host, h.cores, 100 * ranks_without_a_core_share(run.summary));
  }
  return std::nullopt;
}

double most_ranks_without_a_core(const std::vector<RunRecord>& runs) {
  double most = 0;
  for (const RunRecord& run : runs) {
    if (run.ok) most = std::max(most, ranks_without_a_core_share(run.summary));
  }
  return most;
}

}  // namespace ddp
