#include "observe/thread_census.h"

#include <cblas.h>
#include <omp.h>

#include <filesystem>
#include <system_error>

namespace ddp {

bool operator==(const ThreadCensus& a, const ThreadCensus& b) {
  return a.threads == b.threads && a.omp_threads == b.omp_threads && a.blas_threads == b.blas_threads;
}

ThreadCensus take_thread_census() {
  ThreadCensus census;
  std::error_code error;
  for (auto it = std::filesystem::directory_iterator("/proc/self/task", error);
       !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    ++census.threads;
  }
  census.omp_threads = omp_get_max_threads();
  census.blas_threads = openblas_get_num_threads();
  return census;
}

}  // namespace ddp
