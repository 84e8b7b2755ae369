#pragma once
// Collective, at the end of a run: every rank's phases, host name, samples and gradient
// traffic into the RunSummary that summary.json and the profiler table are made from.
#include <array>
#include <optional>
#include <vector>
#include "dist/communicator.h"
#include "dist/grad_reducer.h"
#include "observe/host_load.h"
#include "observe/phase_clock.h"
#include "observe/sched_stats.h"

#include "train/records/run_summary.h"

namespace ddp {

using PhaseCalls = std::array<int64_t, kPhaseCount>;

// Fills phases_per_rank, hosts, allreduce_per_rank and allreduce (rank zero's), and turns
// train_samples from this rank's into the sum over all ranks. Returns every rank's phase
// calls, which only the profiler table shows (summary.json does not hold them).
std::vector<PhaseCalls> gather_run_stats(Communicator& comm, const PhaseClock& clock, const AllreduceStats& mine,
                                         RunSummary& stats);

// Collective, at the end of training on the thread that took `start` (the compute thread):
// fills sched_per_rank (start to now) and cores_per_rank at rank zero. sched_per_rank stays
// empty when any rank has no snapshot (its /proc was unreadable); other ranks' lists stay empty.
void gather_sched_stats(Communicator& comm, const std::optional<SchedSnapshot>& start, RunSummary& stats);
// Collective, at the end of training: every rank's CPU time and its host's busy core time since
// `start` into stats.host_load at rank zero, one entry per machine (kernel), named by the host
// names of its ranks (stats.hosts, filled by gather_run_stats). Stays empty when any rank has no
// snapshot (its /proc/stat was unreadable).
void gather_host_load(Communicator& comm, const std::optional<HostLoadSnapshot>& start, RunSummary& stats);
// Collective: every rank's thread census (observe/thread_census.h) into stats.threads_per_rank
// at rank zero, which writes summary.json.
void gather_thread_census(Communicator& comm, const ThreadCensus& mine, RunSummary& stats);

}  // namespace ddp
