#include "dist/launcher.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <string>
#include <vector>

#include "ddpscope/error.h"
#include "dist/mpi_communicator.h"
#include "dist/mpirun_output.h"

namespace ddp {
namespace {

template <typename F>
std::string usage_error_of(F&& f) {
  try {
    f();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(CheckWorld, AcceptsTheWorldItIsGivenOrOmittedDevices) {
  auto comm = make_local_communicator();
  check_world(*comm, 0, 1);
  check_world(*comm, 1, 1);
  check_same_config(*comm, {{"batch_size", "16"}});
}

TEST(CheckWorld, SaysWhatTheWorldIsAndWhatWasAsked) {
  auto comm = make_local_communicator();
  EXPECT_EQ(usage_error_of([&] { check_world(*comm, 3, 1); }),
            "--devices 3 but this job was started with 1 rank(s) (mpirun -np / srun -n 1); omit --devices or make "
            "them agree");
  EXPECT_EQ(usage_error_of([&] { check_world(*comm, 1, 2); }),
            "--num-nodes 2 but this job's 1 rank(s) run on 1 host(s); set --num-nodes 1");
}

// Children of the relaunch tests below: this executable again, under mpirun.
// The relay of mpirun's stderr passes the ranks' lines and holds Open MPI's back, even where
// a rank's message arrives inside one of mpirun's help blocks, split across reads.
TEST(MpirunOutput, PassesTheRanksLinesAndHidesOpenMpisOwn) {
  const std::string dashes(74, '-');
  const std::string stop =
      "ddpscope: error: stopped by SIGINT at epoch 1, optimizer step 9; the checkpoint x holds it\n";
  const std::string text = "Epoch 1/3\n" + dashes + "\nmpirun detected that one or more processes exited with\n" +
                           stop + "non-zero status, thus causing the job to be terminated.\n" + dashes +
                           "\n[vm:123] a daemon's log\nPrimary job  terminated normally\nlast line, unterminated";
  MpirunOutput output(/*show_open_mpi=*/false);
  ::testing::internal::CaptureStderr();
  const std::size_t half = text.find("SIGINT");
  output.feed(text.data(), half);
  output.feed(text.data() + half, text.size() - half);
  output.flush();
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "Epoch 1/3\n" + stop + "last line, unterminated");
  EXPECT_EQ(output.hidden_lines(), 6U);
  EXPECT_FALSE(output.rank_failure());
  EXPECT_TRUE(output.ranks_spoke());
  EXPECT_EQ(output.first_hidden_paragraph(),
            "mpirun detected that one or more processes exited with non-zero status, thus causing the job to be "
            "terminated. [vm:123] a daemon's log Primary job  terminated normally");
}

// mpirun that refuses to start says why in a help block whose paragraphs a blank line ends
// (which reaches the relay joined to the next line).
TEST(MpirunOutput, KeepsTheFirstParagraphOfWhatItHid) {
  const std::string dashes(74, '-');
  const std::string text = dashes +
                           "\nThere are not enough slots available in the system to satisfy the 5\nslots "
                           "that were requested by the application:\n\n  ddpscope\n\nEither request fewer slots\n" +
                           dashes + "\n";
  MpirunOutput output(/*show_open_mpi=*/false);
  output.feed(text.data(), text.size());
  output.flush();
  EXPECT_EQ(output.first_hidden_paragraph(),
            "There are not enough slots available in the system to satisfy the 5 slots that were requested by the "
            "application:");
  EXPECT_FALSE(output.ranks_spoke());
}

TEST(MpirunOutput, NamesTheRankThatWasKilled) {
  EXPECT_EQ(rank_failure_in("mpirun noticed that process rank 1 with PID 123 on node vm exited on signal 9 (Killed)."),
            "rank 1 (on vm) was killed by signal 9 (Killed); mpirun stopped the other ranks");
  EXPECT_EQ(rank_failure_in("Epoch 1/3"), std::nullopt);
}

TEST(LauncherChild, DISABLED_AllreduceAndFinish) {
  auto comm = make_mpi_communicator();
  std::vector<float> x(10, 1.0f);
  comm->allreduce_sum(std::span<float>(x));
  EXPECT_EQ(x[9], static_cast<float>(comm->size()));
  EXPECT_STREQ(std::getenv("DDPSCOPE_LAUNCHED"), "1");
}

TEST(LauncherChild, DISABLED_Rank1IsKilled) {
  auto comm = make_mpi_communicator();
  comm->barrier();
  if (comm->rank() == 1) raise(SIGKILL);
  comm->barrier();
}

int relaunch_self(const std::string& test, int devices) {
  std::string self = "launcher_test", all = "--gtest_also_run_disabled_tests", filter = "--gtest_filter=" + test;
  std::vector<char*> argv = {self.data(), all.data(), filter.data(), nullptr};
  return relaunch_under_mpirun(3, argv.data(), {devices});
}

TEST(Relaunch, RunsThisExecutableUnderMpirunAndReturnsItsCode) {
  EXPECT_EQ(relaunch_self("LauncherChild.DISABLED_AllreduceAndFinish", 2), 0);
}

TEST(Relaunch, MapsARankKilledByASignalToCode4NamingTheRank) {
  ::testing::internal::CaptureStderr();
  const int code = relaunch_self("LauncherChild.DISABLED_Rank1IsKilled", 2);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 4) << err;
  EXPECT_NE(err.find("ddpscope: error: rank 1 (on "), std::string::npos) << err;
  EXPECT_NE(err.find(") was killed by signal 9 (Killed); mpirun stopped the other ranks"), std::string::npos) << err;
}

TEST(Relaunch, OversubscribesOnlyWhenCoresAreShortAndSaysSo) {
  const long cores = sysconf(_SC_NPROCESSORS_ONLN);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(relaunch_self("LauncherChild.DISABLED_AllreduceAndFinish", static_cast<int>(cores) + 1), 0);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("only " + std::to_string(cores) + " are available: oversubscribing"), std::string::npos) << err;
}

TEST(Relaunch, RefusesToRecurse) {
  setenv("DDPSCOPE_LAUNCHED", "1", 1);
  EXPECT_THROW(relaunch_self("LauncherChild.DISABLED_AllreduceAndFinish", 2), DistributedError);
  unsetenv("DDPSCOPE_LAUNCHED");
}

TEST(Relaunch, MissingMpirunIsAUsageErrorSayingWhatToInstall) {
  const std::string path = std::getenv("PATH");
  setenv("PATH", "/nonexistent", 1);
  const std::string message = usage_error_of([] { relaunch_self("LauncherChild.DISABLED_AllreduceAndFinish", 2); });
  setenv("PATH", path.c_str(), 1);
  EXPECT_EQ(message,
            "--devices 2 runs one process per device under Open MPI's mpirun, which is not on PATH; install it "
            "(Debian/Ubuntu: apt-get install openmpi-bin) or use --devices 1");
}

}  // namespace
}  // namespace ddp
