#pragma once
// Starting and checking the world of ranks: `ddpscope train --devices 3`
// started by hand re-runs itself under mpirun; started by mpirun or srun it takes the world
// it is given, after checking that it is the one the options ask for.
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ddpscope/config.h"
#include "dist/communicator.h"

namespace ddp {

struct LaunchOptions {
  int devices = 1;
  int threads_per_device = 1;
  bool verbose = false;  // pass Open MPI's own messages through
};

// Runs `mpirun -np devices --bind-to core <this executable> argv[1..]` and returns the exit
// code the job should end with, once every process it started has ended. Ranks get one
// core each (threads_per_device cores with --map-by slot:PE=T); with fewer cores than that
// it oversubscribes unpinned and says so on stderr. As root it adds --allow-run-as-root.
//   - SIGINT/SIGTERM go to the ranks themselves: the first stops them at the next
//     optimizer step with a checkpoint (exit 128 + signal), a second at once.
//   - A rank killed or gone without finishing: exit 4 naming the rank; the other ranks are
//     killed rather than left to wait for it. mpirun killed: exit 4 naming it.
//   - This process killed: mpirun gets SIGTERM (parent-death signal) and ends the job.
//   - Open MPI's own messages are held back unless verbose; the ranks' lines pass.
// The children see DDPSCOPE_LAUNCHED=1, which makes a second re-launch an error instead of
// a fork bomb. Throws UsageError when mpirun is not on PATH.
int relaunch_under_mpirun(int argc, char** argv, const LaunchOptions& launch);

// The cores this process may run on (its affinity mask).
int available_cores();

// When this rank was started by relaunch_under_mpirun: the moment of the launch, on this
// process's steady clock; otherwise now. Wall times count from here, start-up included.
std::chrono::steady_clock::time_point job_start_time();

// Collective. devices_requested: --devices, or 0 when omitted; num_nodes: --num-nodes.
// Throws UsageError (on every rank alike) when the world differs from what was asked.
void check_world(Communicator& comm, int devices_requested, int num_nodes);

// Collective. Throws UsageError (on every rank alike) naming the ranks whose options differ
// from rank 0's, and the first option in which the first of them differs.
void check_same_config(Communicator& comm, const OptionTexts& options);

}  // namespace ddp
