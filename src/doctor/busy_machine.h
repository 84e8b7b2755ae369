#pragma once
// Whether other processes used the machine while a run trained (summary.json's host_load:
// the host's busy core time less the ranks' own CPU time). A run on a busy machine is slower
// than the same run on a quiet one, and a model fitted to it predicts worse (measured: 76 %
// off with another process using one of two cores, against 9.3 % quiet), so the doctor says
// it, and predict widens its band by the share of the cores the others took.
#include <optional>
#include <string>
#include <vector>

#include "doctor/run_record.h"

namespace ddp {

// Other processes' CPU time above this share of one core, on average over the run, is said.
inline constexpr double kBusyMinCoreShare = 0.10;

// The largest share of a host's cores that other processes took during the run (others'
// core-seconds / (cores x wall)); nullopt when the run measured none (no host_load).
std::optional<double> others_share_of_cores(const RunSummary& summary);

// A note for a run whose host was busy beyond kBusyMinCoreShare; nullopt otherwise.
std::optional<std::string> busy_note(const RunRecord& run);

// The largest others_share_of_cores over a doctor's runs (doctor.json's, read back by
// doctor_file.h); 0 when none measured it.
double busiest_share_of_cores(const std::vector<RunRecord>& runs);

// Ranks that outnumber their machine's cores share them: each computes slower than on a core of
// its own, by a factor the model does not price (measured: the doctor across 3 namespace hosts
// of a 2-core machine predicted 3 devices 25-30 % under the run). The largest share of a
// machine's ranks without a core of their own, (ranks - cores) / ranks; 0 where they fit.
double ranks_without_a_core_share(const RunSummary& summary);

// A note for a run whose ranks outnumbered a machine's cores; nullopt otherwise.
std::optional<std::string> shared_cores_note(const RunRecord& run);

// The largest ranks_without_a_core_share over a doctor's runs: predict widens its band by it.
double most_ranks_without_a_core(const std::vector<RunRecord>& runs);

}  // namespace ddp
