#include "dist/mpi_error.h"

#include <fmt/format.h>

#include "ddpscope/error.h"

namespace ddp {

void check_mpi(int rc, const char* call, int rank) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(rc, text, &length) != MPI_SUCCESS) fmt::format_to_n(text, sizeof(text) - 1, "error {}", rc);
  throw DistributedError(fmt::format("rank {}: {} failed: {}", rank, call, text));
}

}  // namespace ddp
