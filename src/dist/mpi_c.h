#pragma once
// Open MPI's <mpi.h> pulls in its deprecated C++ bindings when compiled as C++, which need
// libmpi_cxx; the build links only the C library (MPI::MPI_C), so every file includes MPI
// through this header.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>
