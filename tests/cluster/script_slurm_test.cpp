// ddpscope doctor -- srun -n {devices} python3 train.py: a user's plain torch DDP script under a
// real Slurm (scripts/local-slurm), its device count given through {devices}, one rank slowed.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "support/local_slurm.h"
#include "support/run_command.h"

namespace ddp {
namespace {

using testing::LocalSlurm;

TEST_F(LocalSlurm, DoctorRunsAUsersScriptUnderSrunAtEachDeviceCountAndNamesTheSlowRank) {
  const std::filesystem::path dir = testing::fresh_dir("slurm_script_doctor");
  const std::string script = std::string(DDPSCOPE_SOURCE_DIR) + "/tests/script/ddp_plain.py";
  const auto r = testing::run_command(
      slurm("PYTHONPATH=" + std::string(DDPSCOPE_SOURCE_DIR) +
            "/tests/script/compat SLOW_RANK=1 SLOW_MS=30 STEPS=40 PLAIN_PORT=29617 " + std::string(DDPSCOPE_BINARY) +
            " doctor --devices 1,2 -- srun -n {devices} /usr/bin/python3 " + script),
      dir);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("devices=2: srun -n 2 /usr/bin/python3 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("2 devices are slower than one"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Straggler: rank 1. The others wait for it; it is slowest in data"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Rank 1 holds the others back"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ddp
