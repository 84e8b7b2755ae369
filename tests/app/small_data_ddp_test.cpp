// Fewer samples than ranks: every rank still trains on its padded shard, a rank with no
// validation sample adds nothing to the sums, and no collective sees mismatched sizes.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support/run_command.h"

namespace ddp {
namespace {

using testing::fresh_dir;
using testing::read_text;
using testing::run_command;

const std::string kBinary = DDPSCOPE_BINARY;
const std::string kTiny =
    " train --hidden-size 8 --max-epochs 3 --log-every-n-steps 1 --progress-bar off"
    " --monitor-interval-ms 0";

std::string metrics(const std::filesystem::path& dir) { return read_text(dir / "ddpscope_logs/version_0/metrics.csv"); }

TEST(SmallDataDdp, OneSampleOnTwoDevicesTrainsAsOnOneDevice) {
  // Both ranks train on the one sample (DistributedSampler's padding), so the averaged
  // gradient, the losses and the metrics are those of one device.
  const auto one = fresh_dir("small_one");
  const auto two = fresh_dir("small_two");
  ASSERT_EQ(run_command(kBinary + kTiny + " --dataset-size 1 --devices 1", one).exit_code, 0);
  const auto r = run_command(kBinary + kTiny + " --dataset-size 1 --devices 2", two);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Training completed in"), std::string::npos) << r.out;
  EXPECT_NE(metrics(two).find("val_loss"), std::string::npos) << metrics(two);
  EXPECT_EQ(metrics(one), metrics(two));
  const auto summary = nlohmann::json::parse(read_text(two / "ddpscope_logs/version_0/summary.json"));
  EXPECT_EQ(summary["train_samples"], 2 * 3);  // one padded sample per rank and epoch
  EXPECT_TRUE(summary["final"]["val_loss"].is_number());
}

TEST(SmallDataDdp, TwoSamplesOnThreeDevicesAndAOneRowCsvOnTwoRun) {
  const auto three = run_command(kBinary + kTiny + " --dataset-size 2 --devices 3", fresh_dir("small_three"));
  EXPECT_EQ(three.exit_code, 0) << three.err;
  const auto dir = fresh_dir("small_csv");
  std::ofstream(dir / "one.csv") << "0.5,1,2,3,4,5,6,7,8,9,0.25\n";
  const auto csv = run_command(kBinary + kTiny + " --data csv:one.csv --devices 2", dir);
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  const auto summary = nlohmann::json::parse(read_text(dir / "ddpscope_logs/version_0/summary.json"));
  EXPECT_TRUE(summary["final"]["val_loss"].is_number());
}

}  // namespace
}  // namespace ddp
