// examples/seed.cpp runs as the seed's script: its own Trainer (ddp, 3 devices, 200 epochs,
// accumulation 3), re-launched under mpirun by itself, in full (about 20 s on 2 cores).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/run_command.h"

namespace ddp {
namespace {

using testing::fresh_dir;
using testing::read_text;
using testing::run_command;

// Built beside the ddpscope binary (CMakeLists.txt).
const std::string kExample = (std::filesystem::path(DDPSCOPE_BINARY).parent_path() / "seed_example").string();

TEST(SeedExample, TrainsTheSeedsTrainerOnThreeRanks) {
  const auto dir = fresh_dir("seed_example");
  const auto r = run_command(kExample, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Profiler report (3 ranks"), std::string::npos) << r.out;
  const std::string last = r.out.substr(r.out.rfind("Training completed in"));
  EXPECT_TRUE(last.starts_with("Training completed in ")) << r.out;
  const auto summary = nlohmann::json::parse(read_text(dir / "ddpscope_logs/version_0/summary.json"));
  EXPECT_EQ(summary["world_size"], 3);
  EXPECT_EQ(summary["strategy"], "ddp");
  EXPECT_EQ(summary["epochs"], 200);
  // 5000 samples in shards of 1667: 7 micro-batches of 256 per rank, 3 optimizer steps per epoch.
  EXPECT_EQ(summary["optimizer_steps"], 600);
  EXPECT_EQ(summary["train_samples"], 200 * 5001);
}

}  // namespace
}  // namespace ddp
