#pragma once
// scripts/local-cluster's two namespace hosts, one rank each, TCP between them, for the
// tests in tests/cluster. Needs root and iproute2; skipped (not passed) without them. Every
// test brings the cluster up and always takes it down.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "support/run_command.h"

namespace ddp::testing {

inline const std::string kScript = std::string(DDPSCOPE_SOURCE_DIR) + "/scripts/local-cluster";
inline const std::string kOptions = "$(" + kScript + " options)";
inline const std::string kMpirun = "ip netns exec ddpscope-login mpirun " + kOptions + " -np 2 ";
// A send buffer of 32 KiB for Open MPI's TCP transport: each message's rendezvous reply then
// never waits behind megabytes of the other direction's data (docs/interconnects.md).
inline const std::string kSmallSendBuffer = " --mca btl_tcp_sndbuf 32768";

class LocalCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root: it creates network namespaces";
    if (std::system("command -v ip >/dev/null && command -v tc >/dev/null") != 0) {
      GTEST_SKIP() << "needs ip and tc: apt-get install -y iproute2";
    }
    const CommandResult up = run_command(kScript + " up 2", fresh_dir("cluster_up"));
    ASSERT_EQ(up.exit_code, 0) << up.err;
    up_ = true;
  }
  void TearDown() override {
    if (up_) EXPECT_EQ(std::system((kScript + " down").c_str()), 0);
  }
  bool up_ = false;
};

inline nlohmann::json summary(const std::filesystem::path& dir, int version = 0) {
  return nlohmann::json::parse(read_text(dir / ("ddpscope_logs/version_" + std::to_string(version)) / "summary.json"));
}

// Each host's outgoing link gets its own rate ("none": unshaped).
inline void shape(const std::string& rate1, const std::string& rate2) {
  ASSERT_EQ(std::system((kScript + " shape 1 " + rate1 + " && " + kScript + " shape 2 " + rate2).c_str()), 0);
}

}  // namespace ddp::testing
