#pragma once
// The threads of one rank, counted near the end of training: how many it runs (the entries
// of /proc/self/task: the training thread, loader workers, the OpenMP team, BLAS, MPI and
// watchdog threads) and the thread settings of the math libraries. With the cores of the
// ranks of a host (RunSummary::cores_per_rank), it tells whether they start more threads
// than the host has cores.

namespace ddp {

struct ThreadCensus {
  int threads = 0;       // entries of /proc/self/task when counted
  int omp_threads = 0;   // omp_get_max_threads() of the training thread: oneDNN's team
  int blas_threads = 0;  // openblas_get_num_threads()
};

bool operator==(const ThreadCensus& a, const ThreadCensus& b);

// The calling thread's process, with the calling thread's OpenMP setting (call it from the
// training thread, which set it).
ThreadCensus take_thread_census();

}  // namespace ddp
