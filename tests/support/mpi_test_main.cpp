// main() of every *_mpi_test: GoogleTest inside an MPI job. Each rank runs every test; the
// process fails when any rank failed (so mpirun's exit code, and ctest, see it), and only
// rank 0 prints, except that other ranks print their own failures, prefixed "[rank R]".
// MPI that does not start is a failure, never a skip.
#include <gtest/gtest.h>
#include "dist/mpi_c.h"
#include "dist/world.h"

#include <cstdio>
#include <cstdlib>

namespace {

class FailurePrinter final : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_, result.file_name() ? result.file_name() : "?",
                 result.line_number(), result.message());
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (info.result()->Failed())
      std::fprintf(stderr, "[rank %d] FAILED %s.%s\n", rank_, info.test_suite_name(), info.name());
  }

 private:
  int rank_;
};

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
    std::fprintf(stderr, "mpi_test_main: MPI_Init_thread failed\n");
    return 1;
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  // A test that leaves ranks in different collectives then fails in seconds, by the
  // communicator's watchdog, instead of waiting for ctest's timeout.
  setenv("DDPSCOPE_COMM_TIMEOUT_S", "10", /*overwrite=*/0);
  ::testing::InitGoogleTest(&argc, argv);
  if (rank != 0) {
    ::testing::TestEventListeners& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new FailurePrinter(rank));
  }
  const int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;
  int any_failed = 1;
  if (MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS) any_failed = 1;
  if (rank == 0 && any_failed && !failed) std::fprintf(stderr, "FAILED on another rank (see its [rank R] lines)\n");
  std::fflush(stdout);
  std::fflush(stderr);
  ddp::release_mpi_world();  // Trainers share a world whose threads must stop before MPI does
  MPI_Finalize();
  return any_failed;
}
