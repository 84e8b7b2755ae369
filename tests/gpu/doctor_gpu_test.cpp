// On a GPU machine: `ddpscope doctor --accelerator cuda` runs one GPU, prices its launches,
// ablates what a GPU has (the probe, the CUDA graph, the precision) and predicts more GPUs on
// the link presets; more ranks than GPUs run sharing them, said in the report. Skipped where
// no GPU is visible.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "gpu_test_support.h"
#include "support/run_command.h"

namespace ddp {
namespace {

using testing::fresh_dir;
using testing::read_text;
using testing::run_command;

const std::string kTiny = " --dataset-size 512 --batch-size 64 --hidden-size 32 --hidden-layers 1 --max-epochs 6";

// More ranks than GPUs run as train runs them, sharing the GPUs, and the report says so.
TEST(DoctorGpu, MoreRanksThanGpusRunSharingThemAndTheReportSaysSo) {
  DDP_REQUIRE_GPU();
  const auto dir = fresh_dir("doctor_gpu_devices");
  const std::string shared = std::to_string(visible_gpus().devices.size() + 1);
  const auto r =
      run_command(testing::ddpscope_binary() + " compare --accelerator cuda --devices 1," + shared + kTiny, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const auto doc = nlohmann::json::parse(read_text(dir / "ddpscope_logs/version_0/compare.json"));
  ASSERT_EQ(doc["runs"].size(), 2u);
  EXPECT_EQ(doc["runs"][1]["summary"]["accelerator"], "cuda");
  EXPECT_EQ(doc["runs"][1]["summary"]["world_size"].get<int>(), std::stoi(shared));
  EXPECT_NE(doc["notes"].dump().find("The runs of " + shared + " ranks shared this machine's"), std::string::npos)
      << doc["notes"].dump(2);
}

TEST(DoctorGpu, OneGpuIsPricedPerLaunchAndMoreArePredictedOnTheLinkPresets) {
  DDP_REQUIRE_GPU();
  const auto dir = fresh_dir("doctor_gpu");
  const auto r = run_command(testing::ddpscope_binary() + " doctor --accelerator cuda" + kTiny, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const auto doc = nlohmann::json::parse(read_text(dir / "ddpscope_logs/version_0/doctor.json"));
  ASSERT_EQ(doc["runs"].size(), 1u);
  EXPECT_EQ(doc["runs"][0]["summary"]["accelerator"], "cuda");
  EXPECT_GT(doc["model"]["seconds_per_kernel"].get<double>(), 0) << doc["model"].dump(2);
  std::set<std::string> ablations;
  for (const auto& a : doc["ablations"]) ablations.insert(a["name"].get<std::string>());
  for (const char* planned : {"no-cuda-graph", "precision=tf32", "precision=bf16-mixed", "batch=1024"}) {
    EXPECT_TRUE(ablations.count(planned)) << planned;
  }
  EXPECT_FALSE(ablations.count("loader-workers=1"));
  for (const auto& p : doc["predictions"]) {
    if (p["measured_wall_seconds"].is_null()) EXPECT_NE(p["interconnect"], "measured") << p.dump();
  }
}

}  // namespace
}  // namespace ddp
