#pragma once
// The process's MPI world, started once on first use and finalised at exit, so that
// several Trainers in one process (tests, compare) share it: MPI cannot start twice.
#include "dist/communicator.h"

namespace ddp {

Communicator& mpi_world();

// Stops the world's threads and, when it started MPI, finalises it. For programs that
// finalise MPI themselves (the multi-rank tests): call it first.
void release_mpi_world();

// After a stop on a signal has been said (rank zero's message, the checkpoint): the ranks
// leave together. mpirun ends the job as soon as one rank exits non-zero, with SIGTERM and
// SIGKILL at once to the others, which could kill rank zero before its checkpoint or its
// message were out. Returns at once on one rank, and never throws (it runs in main's error
// handler): a failed barrier means a rank is gone, and mpirun ends the job anyway.
void leave_together_after_stop() noexcept;

// Ends the job after an error on this rank: MPI_Abort with the code when this process is
// one of several ranks (the others would wait for it in a collective), else just returns.
void end_job_on_error(int exit_code);

}  // namespace ddp
