// The launcher (`ddpscope train --devices 2` started by hand) when something dies or is
// signalled: a killed rank, a killed mpirun, a killed launcher, SIGINT/SIGTERM. Whatever
// happens, no process it started outlives it, and the exit code is the documented one.
// Also what it prints: ddpscope's own line, Open MPI's text only with --verbose, and the
// progress bar of rank zero when the launcher's stderr is a terminal.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "base/process_tree.h"
#include "support/background_run.h"
#include "support/run_command.h"

namespace ddp {
namespace {

using testing::BackgroundRun;
using testing::fresh_dir;
using testing::is_alive;
using testing::run_command;

const std::string kBinary = DDPSCOPE_BINARY;
const std::string kLongRun = kBinary + " train --devices 2 --max-epochs 100000 --progress-bar off --version t";

// The run's processes by role, once it trains.
struct Job {
  pid_t launcher = -1;
  pid_t mpirun = -1;
  std::vector<pid_t> ranks;
  std::vector<pid_t> all;
};

Job job_of(const BackgroundRun& run) {
  Job job;
  job.launcher = run.pid();
  job.all = run.processes();
  for (const pid_t pid : job.all) {
    if (pid == job.launcher) continue;
    if (executable_of(pid) == executable_of(job.launcher)) {
      job.ranks.push_back(pid);
    } else {
      job.mpirun = pid;
    }
  }
  return job;
}

// Starts the long run and waits until both ranks train.
Job start(BackgroundRun& run) {
  EXPECT_TRUE(run.wait_for("ddpscope_logs/t/hparams.yaml")) << run.err();
  Job job = job_of(run);
  EXPECT_EQ(job.ranks.size(), 2u) << run.err();
  EXPECT_GT(job.mpirun, 0);
  return job;
}

// None of `pids` is alive within `limit`.
::testing::AssertionResult all_gone(const std::vector<pid_t>& pids, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    std::string living;
    for (const pid_t pid : pids) {
      if (is_alive(pid)) living += " " + std::to_string(pid);
    }
    if (living.empty()) return ::testing::AssertionSuccess();
    if (std::chrono::steady_clock::now() > deadline) {
      return ::testing::AssertionFailure() << "still alive after " << limit.count() << " ms:" << living;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

TEST(LauncherFault, AKilledRankEndsTheJobWithExit4NamingItAndNoProcessLeft) {
  BackgroundRun run(kLongRun, fresh_dir("launcher_kill_rank"));
  const Job job = start(run);
  ASSERT_EQ(job.ranks.size(), 2u);
  ::kill(job.ranks[1], SIGKILL);
  EXPECT_EQ(run.wait(), 4) << run.err();
  EXPECT_TRUE(all_gone(job.all, std::chrono::milliseconds(1000)));
  EXPECT_NE(run.err().find("ddpscope: error: rank "), std::string::npos) << run.err();
  EXPECT_NE(run.err().find("was killed by signal 9 (Killed)"), std::string::npos) << run.err();
  // Open MPI's own text is held back without --verbose.
  EXPECT_EQ(run.err().find("-----"), std::string::npos) << run.err();
  EXPECT_EQ(run.err().find("mpirun noticed"), std::string::npos) << run.err();
}

TEST(LauncherFault, AKilledMpirunEndsTheJobWithExit4NamingItAndNoProcessLeft) {
  BackgroundRun run(kLongRun, fresh_dir("launcher_kill_mpirun"));
  const Job job = start(run);
  ASSERT_GT(job.mpirun, 0);
  ::kill(job.mpirun, SIGKILL);
  EXPECT_EQ(run.wait(), 4) << run.err();
  EXPECT_TRUE(all_gone(job.all, std::chrono::milliseconds(1000)));
  EXPECT_NE(run.err().find("ddpscope: error: mpirun (pid " + std::to_string(job.mpirun) +
                           ") was killed by signal 9 (Killed); its ranks were stopped"),
            std::string::npos)
      << run.err();
}

TEST(LauncherFault, AKilledLauncherTakesMpirunAndTheRanksWithIt) {
  BackgroundRun run(kLongRun, fresh_dir("launcher_kill_launcher"));
  const Job job = start(run);
  ::kill(job.launcher, SIGKILL);
  EXPECT_EQ(run.wait(), 128 + SIGKILL);
  // mpirun gets SIGTERM as the launcher dies and takes its ranks down at once.
  EXPECT_TRUE(all_gone(job.all, std::chrono::milliseconds(5000)));
}

// Open MPI's files of a job: its session directory and the ranks' shared-memory segments.
std::filesystem::path job_folder(pid_t launcher) {
  return std::filesystem::path("/dev/shm") / ("ddpscope-job." + std::to_string(launcher));
}

std::vector<std::string> names_in(const std::filesystem::path& folder) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

// A killed mpirun cannot remove its files (they were left in /tmp/ompi.* and /dev/shm): the
// launcher puts them in a folder of its own and removes it.
TEST(LauncherFault, OpenMpisFilesGoInTheJobsFolderWhichGoesWithAKilledMpirun) {
  BackgroundRun run(kLongRun, fresh_dir("launcher_files"));
  const Job job = start(run);
  const auto folder = job_folder(job.launcher);
  ASSERT_TRUE(std::filesystem::is_directory(folder));
  const std::vector<std::string> names = names_in(folder);
  EXPECT_EQ(
      std::count_if(names.begin(), names.end(), [](const std::string& n) { return n.starts_with("vader_segment"); }), 2)
      << ::testing::PrintToString(names);
  EXPECT_EQ(std::count_if(names.begin(), names.end(), [](const std::string& n) { return n.starts_with("ompi."); }), 1)
      << ::testing::PrintToString(names);
  ::kill(job.mpirun, SIGKILL);
  EXPECT_EQ(run.wait(), 4) << run.err();
  EXPECT_FALSE(std::filesystem::exists(folder));
}

// A killed launcher cannot remove the folder: the next launch on the machine does.
TEST(LauncherFault, AFolderLeftByAKilledLauncherGoesAtTheNextLaunch) {
  const auto dir = fresh_dir("launcher_files_left");
  std::filesystem::path folder;
  {
    BackgroundRun run(kLongRun, dir);
    const Job job = start(run);
    folder = job_folder(job.launcher);
    ::kill(job.launcher, SIGKILL);
    EXPECT_EQ(run.wait(), 128 + SIGKILL);
    EXPECT_TRUE(all_gone(job.all, std::chrono::milliseconds(5000)));
  }
  ASSERT_TRUE(std::filesystem::exists(folder)) << "nothing left to test";
  const auto r = run_command(kBinary + " train --devices 2 --max-epochs 1 --dataset-size 64 --version next", dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(std::filesystem::exists(folder));
}

TEST(LauncherFault, SigintAndSigtermExitWith128PlusTheSignalNamingIt) {
  for (const int signal : {SIGINT, SIGTERM}) {
    const std::string name = signal == SIGINT ? "SIGINT" : "SIGTERM";
    BackgroundRun run(kLongRun, fresh_dir("launcher_" + name));
    const Job job = start(run);
    ::kill(job.launcher, signal);
    EXPECT_EQ(run.wait(), 128 + signal) << run.err();
    EXPECT_TRUE(all_gone(job.all, std::chrono::milliseconds(1000)));
    EXPECT_NE(run.err().find("stopped by " + name), std::string::npos) << run.err();
    EXPECT_EQ(run.err().find("-----"), std::string::npos) << run.err();
  }
}

TEST(LauncherFault, VerboseShowsOpenMpisOwnText) {
  BackgroundRun run(kLongRun + " --verbose", fresh_dir("launcher_verbose"));
  const Job job = start(run);
  ASSERT_EQ(job.ranks.size(), 2u);
  ::kill(job.ranks[1], SIGKILL);
  EXPECT_EQ(run.wait(), 4) << run.err();
  EXPECT_NE(run.err().find("mpirun noticed that process rank"), std::string::npos) << run.err();
}

TEST(LauncherOutput, RankZerosProgressBarReachesATerminal) {
  // script(1) gives the launcher a terminal; the ranks write to mpirun's pipe.
  const auto result =
      run_command("script -qec \"" + kBinary + " train --devices 2 --max-epochs 3 --dataset-size 256\" /dev/null",
                  fresh_dir("launcher_progress"));
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("Epoch 3/3 ["), std::string::npos) << result.out;
}

}  // namespace
}  // namespace ddp
