// A rank that stops (SIGSTOP) or hangs outside communication ends the job: the others
// exit with code 4 well within 30 s, naming the rank, and no process is left behind.
// Runs dist_communicator_mpi_test's disabled FaultScenario under mpirun (it sits next to
// this executable in the build folder) with a 3 s collective timeout.
#include <gtest/gtest.h>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "support/run_command.h"

namespace ddp {
namespace {

namespace fs = std::filesystem;

struct FaultRun {
  testing::CommandResult result;
  double seconds = 0;
  fs::path dir;
};

FaultRun run_fault(const std::string& fault, int ranks) {
  const fs::path helper = fs::read_symlink("/proc/self/exe").parent_path() / "dist_communicator_mpi_test";
  EXPECT_TRUE(fs::exists(helper)) << helper << " missing: build the dist_communicator_mpi_test target";
  FaultRun run;
  run.dir = testing::fresh_dir("fault_" + fault + "_" + std::to_string(ranks));
  const std::string command = "DDPSCOPE_COMM_TIMEOUT_S=3 DDPSCOPE_FAULT=" + fault + " DDPSCOPE_FAULT_DIR='" +
                              run.dir.string() + "' " + DDPSCOPE_MPIRUN + " -np " + std::to_string(ranks) +
                              " --oversubscribe --allow-run-as-root --bind-to none '" + helper.string() +
                              "' --gtest_also_run_disabled_tests --gtest_filter=FaultScenario.*";
  const auto start = std::chrono::steady_clock::now();
  run.result = testing::run_command(command, run.dir);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

// Running, stopped or sleeping; not gone and not a zombie (dead, waiting for whoever
// inherited it to reap it; in a container that can be a lazy init).
bool is_running(pid_t pid) {
  const std::string stat = testing::read_text("/proc/" + std::to_string(pid) + "/stat");
  const std::size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

// Every rank wrote its pid; none may still run a moment later.
void expect_no_survivors(const FaultRun& run, int ranks) {
  for (int r = 0; r < ranks; ++r) {
    const std::string text = testing::read_text(run.dir / ("rank" + std::to_string(r) + ".pid"));
    ASSERT_FALSE(text.empty()) << "rank " << r << " never started";
    const pid_t pid = std::stoi(text);
    for (int tries = 0; tries < 20 && is_running(pid); ++tries)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_FALSE(is_running(pid)) << "rank " << r << " (pid " << pid << ") is still running";
  }
}

TEST(Fault, StoppedRankEndsTheJobWithCode4NamingIt) {
  for (int ranks : {2, 3}) {
    const FaultRun run = run_fault("stop", ranks);
    EXPECT_EQ(run.result.exit_code, 4) << run.result.err;
    EXPECT_LT(run.seconds, 30.0);
    EXPECT_NE(run.result.err.find("allreduce made no progress for 3 s; rank(s) 1 (on " + testing::this_host() +
                                  ") stopped responding (hung, killed or cut off)"),
              std::string::npos)
        << run.result.err;
    expect_no_survivors(run, ranks);
  }
}

TEST(Fault, RankHungOutsideCommunicationEndsTheJobWithCode4NamingIt) {
  const FaultRun run = run_fault("spin", 2);
  EXPECT_EQ(run.result.exit_code, 4) << run.result.err;
  EXPECT_LT(run.seconds, 30.0);
  EXPECT_NE(run.result.err.find(
                "ddpscope: error: rank 0: allreduce made no progress for 3 s; rank(s) 1 (on " + testing::this_host() +
                ") stopped responding (hung or killed): still running but never reached this allreduce"),
            std::string::npos)
      << run.result.err;
  expect_no_survivors(run, 2);
}

}  // namespace
}  // namespace ddp
