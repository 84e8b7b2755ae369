#pragma once
// Collective, at the end of a run: every rank's phases, host name, samples and gradient
// traffic into the RunStats that summary.json and the profiler table are made from.
#include "dist/communicator.h"
#include "dist/grad_reducer.h"
#include "observe/phase_clock.h"
#include "train/run_stats.h"

namespace ddp {

// Fills phases_per_rank, phase_calls_per_rank, hosts, allreduce_per_rank and allreduce
// (rank zero's), and turns train_samples from this rank's into the sum over all ranks.
void gather_run_stats(Communicator& comm, const PhaseClock& clock, const AllreduceStats& mine, RunStats& stats);

}  // namespace ddp
