#pragma once
// Every MPI return code is checked: communicators use MPI_ERRORS_RETURN, and a
// failed call becomes a DistributedError (exit code 4) naming the call and the rank.
#include "dist/mpi_c.h"

namespace ddp {

// Throws DistributedError "rank R: CALL failed: <MPI's error string>" unless rc == MPI_SUCCESS.
void check_mpi(int rc, const char* call, int rank);

}  // namespace ddp
