#pragma once
// The Communicator over Open MPI. Every blocking call is watched by a CommWatchdog, so a
// dead or stopped rank ends the job with exit code 4 instead of a hang.
#include <memory>

#include "dist/communicator.h"

namespace ddp {

// True when this process is one rank of a job started by mpirun/mpiexec (Open MPI, or any
// PMI/PMIx launcher) or srun: the launcher's environment variables are present.
bool launched_by_mpi();

// The number of ranks the launcher started (from its environment), 1 when not launched.
int launcher_world_size();

// Initialises MPI (MPI_THREAD_MULTIPLE: the watchdog thread talks while the training
// thread is inside a collective) unless already initialised, and finalises it on
// destruction if it initialised it; so call it once per process. Reads the collective
// timeout from DDPSCOPE_COMM_TIMEOUT_S. Throws DistributedError when MPI fails to start.
std::unique_ptr<Communicator> make_mpi_communicator();

// Ends the whole job now with exit_code (MPI_Abort when MPI is running, else _Exit).
// For an error only this rank saw: returning normally would leave the other ranks waiting
// in a collective until their watchdogs fire.
[[noreturn]] void abort_mpi_job(int exit_code);

}  // namespace ddp
