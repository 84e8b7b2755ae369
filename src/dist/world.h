#pragma once
// The process's MPI world, started once on first use and finalised at exit, so that
// several Trainers in one process (tests, compare) share it: MPI cannot start twice.
#include "ddpscope/communicator.h"

namespace ddp {

Communicator& mpi_world();

// Stops the world's threads and, when it started MPI, finalises it. For programs that
// finalise MPI themselves (the multi-rank tests): call it first.
void release_mpi_world();

// Ends the job after an error on this rank: MPI_Abort with the code when this process is
// one of several ranks (the others would wait for it in a collective), else just returns.
void end_job_on_error(int exit_code);

}  // namespace ddp
