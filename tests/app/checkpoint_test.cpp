// Checkpoints through the command line: exact resume after a stop or a kill, at 1 and 2
// ranks and across world sizes; signals; --init-from; damaged checkpoints.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "io/safetensors.h"
#include "support/run_command.h"
#include "support/tensor_bytes.h"

namespace ddp {
namespace {

using testing::fresh_dir;
using testing::read_text;
using testing::run_command;

const std::string kBinary = DDPSCOPE_BINARY;
const std::string kRun =
    " train --data teacher --dataset-size 600 --batch-size 32 --hidden-size 32"
    " --accumulate-grad-batches 3 --progress-bar off";

std::filesystem::path run_folder(const std::filesystem::path& dir, const std::string& version) {
  return dir / "ddpscope_logs" / version;
}

TEST(Checkpoint, ResumeFromAnEpochCheckpointIsBitIdenticalAtOneAndTwoRanks) {
  for (const std::string devices : {"1", "2"}) {
    const auto dir = fresh_dir("resume_" + devices);
    const std::string run = kBinary + kRun + " --devices " + devices + " --checkpoint-every-n-epochs 1";
    ASSERT_EQ(run_command(run + " --max-epochs 6 --version full", dir).exit_code, 0);
    ASSERT_EQ(run_command(run + " --max-epochs 3 --version part", dir).exit_code, 0);
    const auto checkpoints = run_folder(dir, "part") / "checkpoints";
    // Lightning's names: epoch index and optimizer steps (7 per epoch on 1 rank, 4 on 2).
    EXPECT_TRUE(std::filesystem::exists(
        checkpoints / (devices == "1" ? "epoch=0-step=7.safetensors" : "epoch=0-step=4.safetensors")));
    EXPECT_TRUE(std::filesystem::exists(checkpoints / "last.safetensors"));
    const auto resumed = run_command(
        run + " --max-epochs 6 --version resumed --ckpt-path " + (checkpoints / "last.safetensors").string(), dir);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    const auto full = testing::tensor_bytes(run_folder(dir, "full") / "final.safetensors");
    EXPECT_EQ(full.size(), 8u);  // 4 layers: weight and bias each
    EXPECT_EQ(full, testing::tensor_bytes(run_folder(dir, "resumed") / "final.safetensors")) << devices << " devices";
  }
}

TEST(Checkpoint, AKilledRunResumedFromItsLastEpochCheckpointEndsBitIdentical) {
  const auto dir = fresh_dir("killed");
  const std::string run = kBinary + kRun + " --checkpoint-every-n-epochs 1 --max-epochs 80";
  ASSERT_EQ(run_command(run + " --version full", dir).exit_code, 0);
  // Started in the background and killed with SIGKILL once it has checkpointed epoch 2.
  const auto checkpoints = run_folder(dir, "killed") / "checkpoints";
  const std::string start =
      "cd '" + dir.string() + "' && (" + run + " --version killed >/dev/null 2>&1 & echo $! > pid)";
  ASSERT_EQ(std::system(start.c_str()), 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!std::filesystem::exists(checkpoints / "epoch=2-step=21.safetensors")) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const pid_t pid = std::stoi(read_text(dir / "pid"));
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto resumed = run_command(
      run + " --version resumed --ckpt-path " + (checkpoints / "epoch=2-step=21.safetensors").string(), dir);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(testing::tensor_bytes(run_folder(dir, "full") / "final.safetensors"),
            testing::tensor_bytes(run_folder(dir, "resumed") / "final.safetensors"));
}

TEST(Checkpoint, ResumeAfterAWorldSizeChangeRunsToTheEnd) {
  const auto dir = fresh_dir("world_change");
  const std::string run = kBinary + kRun + " --checkpoint-every-n-epochs 1";
  ASSERT_EQ(run_command(run + " --devices 2 --max-epochs 2 --version two", dir).exit_code, 0);
  const auto resumed = run_command(run + " --devices 1 --max-epochs 4 --version one --ckpt-path " +
                                       (run_folder(dir, "two") / "checkpoints/last.safetensors").string(),
                                   dir);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const auto summary = nlohmann::json::parse(read_text(run_folder(dir, "one") / "summary.json"));
  EXPECT_EQ(summary["epochs"], 4);
  // Two epochs at 2 ranks (4 steps each: 300 samples, 10 micro-batches), two at 1 rank (7).
  EXPECT_EQ(summary["optimizer_steps"], 2 * 4 + 2 * 7);
}

TEST(Checkpoint, SigintFinishesTheStepWritesACheckpointAndResumesExactly) {
  const auto dir = fresh_dir("sigint");
  const std::string run = kBinary + kRun + " --max-epochs 3000";
  const std::string start =
      "cd '" + dir.string() + "' && (" + run + " --version stopped >out.txt 2>err.txt & echo $! > pid)";
  ASSERT_EQ(std::system(start.c_str()), 0);
  // Signalled once training runs: hparams.yaml is written after the handlers are in place.
  const auto started = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!std::filesystem::exists(run_folder(dir, "stopped") / "hparams.yaml")) {
    ASSERT_LT(std::chrono::steady_clock::now(), started);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const pid_t pid = std::stoi(read_text(dir / "pid"));
  ASSERT_EQ(::kill(pid, SIGINT), 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (::kill(pid, 0) == 0) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const std::string err = read_text(dir / "err.txt");
  EXPECT_NE(err.find("stopped by SIGINT"), std::string::npos) << err;
  EXPECT_NE(err.find("--ckpt-path"), std::string::npos) << err;
  const auto last = run_folder(dir, "stopped") / "checkpoints/last.safetensors";
  ASSERT_TRUE(std::filesystem::exists(last)) << err;
  const auto epoch = std::stoll(read_safetensors(last).metadata.at("epoch"));
  ASSERT_LT(epoch, 3000) << "the run ended before the signal";
  // The uninterrupted run to the same end, and the resumed one, agree bit for bit.
  const std::string until = " --max-epochs " + std::to_string(epoch + 2);
  ASSERT_EQ(run_command(run + until + " --version full", dir).exit_code, 0);
  const auto resumed = run_command(run + until + " --version resumed --ckpt-path " + last.string(), dir);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(testing::tensor_bytes(run_folder(dir, "full") / "final.safetensors"),
            testing::tensor_bytes(run_folder(dir, "resumed") / "final.safetensors"));
}

TEST(Checkpoint, SigtermWritesACheckpointAndExitsWith143) {
  const auto dir = fresh_dir("sigterm");
  // Signalled once training runs (its hparams.yaml is written after the handlers are in place).
  run_command("sh -c '" + kBinary + kRun +
                  " --max-epochs 3000 --version t 2>err.txt & p=$!; i=0; "
                  "while [ ! -f ddpscope_logs/t/hparams.yaml ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; "
                  "sleep 0.3; kill -TERM $p; wait $p; echo $? > code'",
              dir);
  EXPECT_EQ(read_text(dir / "code"), "143\n");
  EXPECT_NE(read_text(dir / "err.txt").find("stopped by SIGTERM"), std::string::npos) << read_text(dir / "err.txt");
  EXPECT_TRUE(std::filesystem::exists(run_folder(dir, "t") / "checkpoints/last.safetensors"));
}

TEST(Checkpoint, InitFromLoadsParametersAndNamesEveryMismatch) {
  const auto dir = fresh_dir("init_from");
  ASSERT_EQ(run_command(kBinary + kRun + " --max-epochs 2 --version a", dir).exit_code, 0);
  const auto final_a = run_folder(dir, "a") / "final.safetensors";
  // A learning rate of 1e-30 leaves the loaded parameters as they are.
  const auto b =
      run_command(kBinary + kRun + " --max-epochs 1 --lr 1e-30 --version b --init-from " + final_a.string(), dir);
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(testing::tensor_bytes(final_a), testing::tensor_bytes(run_folder(dir, "b") / "final.safetensors"));
  const auto wrong =
      run_command(kBinary + kRun + " --hidden-size 16 --max-epochs 1 --init-from " + final_a.string(), dir);
  EXPECT_EQ(wrong.exit_code, 2) << wrong.err;
  EXPECT_NE(wrong.err.find("layers.0.weight"), std::string::npos) << wrong.err;
}

// A copy of `file` whose tensor `name` holds `value` (NaN unless given) in its first element.
std::filesystem::path with_nan(const std::filesystem::path& file, const std::string& name,
                               const std::filesystem::path& copy,
                               float value = std::numeric_limits<float>::quiet_NaN()) {
  SafetensorsFile contents = read_safetensors(file);
  std::vector<TensorView> views;
  for (Tensor& t : contents.tensors) {
    if (t.name == name) std::memcpy(t.bytes.data(), &value, sizeof value);
    views.emplace_back(t.name, t.dtype, t.shape, std::span<const std::byte>(t.bytes));
  }
  write_safetensors(copy, views, contents.metadata);
  return copy;
}

TEST(Checkpoint, ACheckpointHoldingNanIsRefusedWithExitThreeNamingTheTensor) {
  const auto dir = fresh_dir("nan_checkpoint");
  ASSERT_EQ(run_command(kBinary + kRun + " --max-epochs 1 --checkpoint-every-n-epochs 1 --version a", dir).exit_code,
            0);
  const auto last = with_nan(run_folder(dir, "a") / "checkpoints/last.safetensors", "optimizer.exp_avg.layers.1.bias",
                             dir / "nan_last.safetensors");
  const auto resumed = run_command(kBinary + kRun + " --max-epochs 2 --ckpt-path " + last.string(), dir);
  EXPECT_EQ(resumed.exit_code, 3) << resumed.err;
  EXPECT_NE(resumed.err.find("checkpoint " + last.string() +
                             ": tensor 'optimizer.exp_avg.layers.1.bias' holds nan at element 0; the run that wrote it "
                             "had diverged or the file is damaged"),
            std::string::npos)
      << resumed.err;
  // A negative second moment is finite, and as damaged: Adam would take its square root.
  const auto negative = with_nan(run_folder(dir, "a") / "checkpoints/last.safetensors",
                                 "optimizer.exp_avg_sq.layers.1.bias", dir / "negative_last.safetensors", -1.0f);
  const auto from_negative = run_command(kBinary + kRun + " --max-epochs 2 --ckpt-path " + negative.string(), dir);
  EXPECT_EQ(from_negative.exit_code, 3) << from_negative.err;
  EXPECT_NE(from_negative.err.find("tensor 'optimizer.exp_avg_sq.layers.1.bias' holds -1 at element 0; Adam's second "
                                   "moment is a mean of squares, never negative"),
            std::string::npos)
      << from_negative.err;
  const auto params =
      with_nan(run_folder(dir, "a") / "final.safetensors", "layers.2.weight", dir / "nan_final.safetensors");
  const auto init = run_command(kBinary + kRun + " --max-epochs 1 --init-from " + params.string(), dir);
  EXPECT_EQ(init.exit_code, 3) << init.err;
  EXPECT_NE(init.err.find("--init-from " + params.string() + ": tensor 'layers.2.weight' holds nan at element 0"),
            std::string::npos)
      << init.err;
}

TEST(Checkpoint, DamagedCheckpointsAreRefusedWithExitThree) {
  const auto dir = fresh_dir("damaged");
  ASSERT_EQ(run_command(kBinary + kRun + " --max-epochs 1 --checkpoint-every-n-epochs 1 --version a", dir).exit_code,
            0);
  const std::string bytes = read_text(run_folder(dir, "a") / "checkpoints/last.safetensors");
  std::ofstream(dir / "truncated.safetensors", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  std::ofstream(dir / "garbage.safetensors", std::ios::binary) << "not a checkpoint at all";
  for (const char* file : {"truncated.safetensors", "garbage.safetensors", "missing.safetensors"}) {
    const auto r = run_command(kBinary + kRun + " --max-epochs 2 --ckpt-path " + file, dir);
    EXPECT_EQ(r.exit_code, 3) << file << r.err;
    EXPECT_NE(r.err.find(file), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace ddp
