// On a GPU machine: `ddpscope doctor --accelerator cuda` runs one GPU, prices its launches,
// ablates what a GPU has (the probe, the CUDA graph, the precision) and predicts more GPUs on
// the link presets only; more than one GPU to run is refused. Skipped where no GPU is visible.
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

TEST(DoctorGpu, MoreThanOneGpuToRunIsRefused) {
  DDP_REQUIRE_GPU();
  const auto dir = fresh_dir("doctor_gpu_devices");
  const auto r = run_command(testing::ddpscope_binary() + " doctor --accelerator cuda --devices 1,3" + kTiny, dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("1 with --accelerator cuda"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "ddpscope_logs"));
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
