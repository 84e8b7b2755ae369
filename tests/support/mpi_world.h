#pragma once
// This process's place in MPI_COMM_WORLD, for tests run under mpirun (mpi_test_main.cpp
// initialises MPI before any test runs).
#include "dist/mpi_c.h"

namespace ddp::testing {

inline int world_rank() {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

inline int world_size() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  return size;
}

}  // namespace ddp::testing
