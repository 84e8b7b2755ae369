// Resuming through the command line: a checkpoint with nothing left to train says so, and a
// resumed run's throughput counts only the work of its own process.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "support/run_command.h"

namespace ddp {
namespace {

using testing::fresh_dir;
using testing::read_text;
using testing::run_command;

const std::string kBinary = DDPSCOPE_BINARY;
const std::string kRun =
    " train --data teacher --dataset-size 96 --batch-size 16 --hidden-size 8"
    " --checkpoint-every-n-epochs 1 --progress-bar off --monitor-interval-ms 0";

nlohmann::json summary(const std::filesystem::path& dir, const std::string& version) {
  return nlohmann::json::parse(read_text(dir / "ddpscope_logs" / version / "summary.json"));
}

TEST(Resume, ACheckpointAtMaxEpochsOrMaxStepsSaysThereIsNothingLeftToTrain) {
  const auto dir = fresh_dir("resume_nothing_left");
  ASSERT_EQ(run_command(kBinary + kRun + " --max-epochs 2 --version done", dir).exit_code, 0);
  const auto last = dir / "ddpscope_logs/done/checkpoints/last.safetensors";
  const std::string steps = summary(dir, "done")["optimizer_steps"].dump();  // 6 per epoch

  const auto epochs = run_command(kBinary + kRun + " --max-epochs 2 --version again --ckpt-path " + last.string(), dir);
  EXPECT_EQ(epochs.exit_code, 0) << epochs.err;
  EXPECT_NE(epochs.out.find("Nothing left to train: the checkpoint " + last.string() +
                            " is at epoch 2, optimizer "
                            "step " +
                            steps + ", which --max-epochs 2 has reached; raise --max-epochs to train further"),
            std::string::npos)
      << epochs.out;
  EXPECT_EQ(epochs.out.find("Throughput"), std::string::npos) << epochs.out;
  EXPECT_EQ(epochs.out.find("Training completed"), std::string::npos) << epochs.out;
  EXPECT_FALSE(std::filesystem::exists(dir / "ddpscope_logs/again"));  // no folder of a run that did nothing

  const auto by_steps =
      run_command(kBinary + kRun + " --max-epochs 5 --max-steps " + steps + " --ckpt-path " + last.string(), dir);
  EXPECT_EQ(by_steps.exit_code, 0) << by_steps.err;
  EXPECT_NE(by_steps.out.find("which --max-steps " + steps + " has reached; raise --max-steps to train further"),
            std::string::npos)
      << by_steps.out;
}

TEST(Resume, AResumedRunCountsOnlyItsOwnStepsAndSamples) {
  const auto dir = fresh_dir("resume_counts");
  ASSERT_EQ(run_command(kBinary + kRun + " --max-epochs 2 --version first", dir).exit_code, 0);
  const auto last = dir / "ddpscope_logs/first/checkpoints/last.safetensors";
  const auto resumed =
      run_command(kBinary + kRun + " --max-epochs 4 --version second --ckpt-path " + last.string(), dir);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const auto first = summary(dir, "first");
  const auto second = summary(dir, "second");
  // Epochs 2 and 3 are as much work as epochs 0 and 1; the step count goes on from the checkpoint's.
  EXPECT_EQ(second["optimizer_steps"], 2 * first["optimizer_steps"].get<int>());
  EXPECT_EQ(second["train_samples"], first["train_samples"]);
  const double wall = second["wall_seconds"].get<double>();
  EXPECT_DOUBLE_EQ(second["throughput"]["optimizer_steps_per_second"].get<double>() * wall,
                   first["optimizer_steps"].get<double>());
  EXPECT_DOUBLE_EQ(second["throughput"]["samples_per_second"].get<double>() * wall,
                   first["train_samples"].get<double>());
}

}  // namespace
}  // namespace ddp
