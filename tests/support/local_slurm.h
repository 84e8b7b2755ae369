#pragma once
// scripts/local-slurm's one-node Slurm (munged, slurmctld, slurmd) for the tests in
// tests/cluster: srun and sbatch run for real. Needs root and Debian's slurm-wlm (scripts/setup.sh
// installs it), and a machine where slurmd can initialise its cgroups (CI's fresh chroot cannot;
// its host stages can); skipped (not passed) without them. Every test brings it up and takes it down.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "support/run_command.h"

namespace ddp::testing {

class LocalSlurm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root: the Slurm daemons run as root";
    if (std::system("command -v slurmd >/dev/null && command -v munged >/dev/null && command -v srun >/dev/null") !=
        0) {
      GTEST_SKIP() << "needs Slurm: apt-get install -y slurmd slurmctld slurm-client munge";
    }
    dir_ = fresh_dir("local_slurm");
    const CommandResult up = run_command(script_ + " up " + dir_.string(), dir_ / "up");
    // Exit 3: slurmd cannot run on this machine (a chroot without cgroups): not run, with why.
    if (up.exit_code == 3) GTEST_SKIP() << up.err;
    ASSERT_EQ(up.exit_code, 0) << up.err;
    up_ = true;
  }
  void TearDown() override {
    if (up_) EXPECT_EQ(std::system((script_ + " down " + dir_.string()).c_str()), 0);
  }
  // A command with this Slurm's configuration.
  std::string slurm(const std::string& command) const {
    return "SLURM_CONF=" + (dir_ / "slurm.conf").string() + " " + command;
  }

  const std::string script_ = std::string(DDPSCOPE_SOURCE_DIR) + "/scripts/local-slurm";
  std::filesystem::path dir_;
  bool up_ = false;
};

}  // namespace ddp::testing
