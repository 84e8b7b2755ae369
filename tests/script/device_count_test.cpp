// A user's command made to run on N devices: {devices}, torchrun's count, or Lightning's.
#include "script/device_count.h"

#include <gtest/gtest.h>

namespace ddp {
namespace {

using Words = std::vector<std::string>;

TEST(DeviceCount, ThePlaceholderIsReplacedWhereverItIs) {
  const CommandAtDevices c = command_at_devices(
      {"srun", "-n", "{devices}", "--gpus={devices}", "python", "train.py", "--tag", "x{devices}y"}, 3);
  EXPECT_EQ(c.control, DeviceControl::kPlaceholder);
  EXPECT_EQ(c.args, (Words{"srun", "-n", "3", "--gpus=3", "python", "train.py", "--tag", "x3y"}));
  EXPECT_TRUE(has_devices_placeholder({"mpirun", "-np", "{devices}"}));
  EXPECT_FALSE(has_devices_placeholder({"python", "train.py"}));
}

TEST(DeviceCount, TorchrunsCountIsRewrittenInEitherSpellingAndAddedWhereAbsent) {
  CommandAtDevices c = command_at_devices(
      {"torchrun", "--nnodes", "1", "--nproc-per-node", "3", "train.py", "--nproc-per-node", "9"}, 2);
  EXPECT_EQ(c.control, DeviceControl::kTorchrun);
  EXPECT_EQ(c.args, (Words{"torchrun", "--nnodes", "1", "--nproc-per-node", "2", "train.py", "--nproc-per-node", "9"}));
  EXPECT_EQ(c.asked, "3");
  EXPECT_EQ(c.option, "--nproc-per-node");

  c = command_at_devices({"/usr/bin/torchrun", "--standalone", "--nproc_per_node=4", "train.py"}, 1);
  EXPECT_EQ(c.args, (Words{"/usr/bin/torchrun", "--standalone", "--nproc_per_node=1", "train.py"}));
  EXPECT_EQ(c.asked, "4");

  c = command_at_devices({"python3", "-m", "torch.distributed.run", "--standalone", "train.py", "--lr", "1"}, 2);
  EXPECT_EQ(c.control, DeviceControl::kTorchrun);
  EXPECT_EQ(c.args, (Words{"python3", "-m", "torch.distributed.run", "--nproc_per_node", "2", "--standalone",
                           "train.py", "--lr", "1"}));
  EXPECT_EQ(c.asked, "1") << "torchrun's own default";
  // The script's own option of that name, after the script, is the script's.
  c = command_at_devices({"torchrun", "train.py", "--nproc-per-node", "5"}, 2);
  EXPECT_EQ(c.args, (Words{"torchrun", "--nproc_per_node", "2", "train.py", "--nproc-per-node", "5"}));
}

TEST(DeviceCount, AnythingElseIsLeftToTheHooksLightningOverride) {
  const CommandAtDevices c = command_at_devices({"python", "train.py", "--devices", "3"}, 2);
  EXPECT_EQ(c.control, DeviceControl::kLightning);
  EXPECT_EQ(c.args, (Words{"python", "train.py", "--devices", "3"}));
  EXPECT_NE(device_control_ways().find("{devices}"), std::string::npos);
  EXPECT_NE(device_control_ways().find("torchrun"), std::string::npos);
  EXPECT_NE(device_control_ways().find("Lightning Trainer"), std::string::npos);
}

}  // namespace
}  // namespace ddp
