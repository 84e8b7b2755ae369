// Signals at random times into real runs of 1 and 2 ranks (the ASan build runs this too):
// every run ends 130 or 143, never crashes, leaves no process behind, and its checkpoint
// resumes to the same final weights as the run that was never interrupted. A fixed seed
// picks when each signal is sent; the assertions hold whenever it is.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <map>
#include <random>
#include <regex>
#include <thread>

#include "io/safetensors.h"
#include "support/background_run.h"
#include "support/run_command.h"
#include "support/sanitizer_build.h"
#include "support/tensor_bytes.h"

namespace ddp {
namespace {

using testing::fresh_dir;
using testing::read_text;
using testing::run_command;

const std::string kBinary = DDPSCOPE_BINARY;
// Short epochs, a periodic checkpoint each: a run lasts about a second.
const std::string kRun =
    " train --data teacher --dataset-size 240 --batch-size 16 --hidden-size 16"
    " --accumulate-grad-batches 3 --max-epochs 100 --checkpoint-every-n-epochs 1"
    " --progress-bar off --monitor-interval-ms 0";

struct Trial {
  int exit_code = -1;
  std::string err;
  std::vector<pid_t> started;  // the run's processes while it trained
};

// Starts a run, waits until it trains, sends `signals` (the second 2 ms after the first)
// after `delay`, and waits for it to end.
Trial interrupt(const std::filesystem::path& dir, const std::string& options, std::chrono::milliseconds delay,
                const std::vector<int>& signals) {
  testing::BackgroundRun run(kBinary + options, dir);
  run.wait_for("ddpscope_logs/t/hparams.yaml");
  std::this_thread::sleep_for(delay);
  Trial trial;
  trial.started = run.processes();
  for (std::size_t i = 0; i < signals.size(); ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ::kill(run.pid(), signals[i]);
  }
  trial.exit_code = run.wait();
  trial.err = run.err();
  return trial;
}

// The newest checkpoint of a stopped run: last.safetensors, else the latest periodic one.
std::filesystem::path newest_checkpoint(const std::filesystem::path& folder) {
  std::filesystem::path newest;
  std::filesystem::file_time_type time{};
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(folder / "checkpoints", error)) {
    if (entry.path().extension() != ".safetensors") continue;
    if (newest.empty() || entry.last_write_time() > time) {
      newest = entry.path();
      time = entry.last_write_time();
    }
  }
  return newest;
}

void stress(int devices, std::vector<int> signals, int trials, uint32_t seed) {
  const auto root = fresh_dir("signal_stress_" + std::to_string(devices) + "_" + std::to_string(signals.size()));
  const std::string options = kRun + " --devices " + std::to_string(devices) + " --version t";
  const auto reference = run_command(kBinary + options, root / "reference");
  ASSERT_EQ(reference.exit_code, 0) << reference.err;
  const auto expected = testing::tensor_bytes(root / "reference/ddpscope_logs/t/final.safetensors");

  int stopped = 0;
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> delay_ms(0, 1000);
  for (int i = 0; i < trials; ++i) {
    const auto dir = root / ("trial" + std::to_string(i));
    const auto delay = std::chrono::milliseconds(delay_ms(random));
    const Trial trial = interrupt(dir, options, delay, signals);
    SCOPED_TRACE("trial " + std::to_string(i) + " after " + std::to_string(delay.count()) + " ms: " + trial.err);
    const auto folder = dir / "ddpscope_logs/t";
    // The launcher and its ranks are gone when it returns.
    for (const pid_t pid : trial.started)
      EXPECT_FALSE(testing::is_alive(pid)) << "process " << pid << " outlived the run";
    if (trial.exit_code == 0) {  // it finished before the signal
      EXPECT_EQ(testing::tensor_bytes(folder / "final.safetensors"), expected);
      continue;
    }
    ++stopped;
    const int first = signals.front(), last = signals.back();
    // Two signals 2 ms apart may be handled in either order: each goes to whichever thread
    // takes it first (the signal watcher, or a thread OpenBLAS started before main with the
    // signals unblocked). The second one handled names itself and gives the exit code (seen
    // in CI's ASan stage: SIGTERM handled before SIGINT, "a second SIGINT", exit 130).
    const bool at_once = trial.err.find("stopped at once by a second") != std::string::npos;
    if (!at_once && trial.exit_code == 128 + first) {
      EXPECT_NE(trial.err.find("stopped by " + std::string(first == SIGINT ? "SIGINT" : "SIGTERM")), std::string::npos);
      // last.safetensors holds the stop point, not an older periodic save.
      std::smatch step;
      ASSERT_TRUE(std::regex_search(trial.err, step, std::regex(R"(optimizer step (\d+);)")));
      EXPECT_EQ(read_safetensors(folder / "checkpoints/last.safetensors").metadata.at("global_step"), step[1].str());
    } else {
      ASSERT_TRUE(at_once) << "neither a graceful stop nor a stop at once";
      ASSERT_TRUE(trial.exit_code == 128 + last || trial.exit_code == 128 + first) << trial.exit_code;
      const int second = trial.exit_code - 128;
      EXPECT_NE(trial.err.find("stopped at once by a second " + std::string(second == SIGINT ? "SIGINT" : "SIGTERM")),
                std::string::npos);
    }
    EXPECT_EQ(trial.err.find("AddressSanitizer"), std::string::npos);
    EXPECT_EQ(trial.err.find("internal error"), std::string::npos);
    if (std::filesystem::exists(folder / "final.safetensors")) {  // the signals came as it ended
      EXPECT_EQ(testing::tensor_bytes(folder / "final.safetensors"), expected);
      continue;
    }
    const auto checkpoint = newest_checkpoint(folder);
    if (checkpoint.empty()) continue;  // stopped at once before the first epoch's checkpoint
    const auto resumed = run_command(
        kBinary + kRun + " --devices " + std::to_string(devices) + " --version r --ckpt-path " + checkpoint.string(),
        dir);
    ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
    if (resumed.out.find("Nothing left to train") != std::string::npos) {  // stopped after the last epoch's save
      const auto saved = testing::tensor_bytes(checkpoint);
      for (const auto& [name, bytes] : expected) EXPECT_EQ(saved.at(name), bytes) << name << " in " << checkpoint;
      continue;
    }
    EXPECT_EQ(testing::tensor_bytes(dir / "ddpscope_logs/r/final.safetensors"), expected)
        << "resumed from " << checkpoint;
  }
  EXPECT_GT(stopped, 0) << "every run ended before its signal: nothing was tested";
}

// Fewer trials in CI's ASan stage, where a trial costs about 7 s, to keep CI under its hour;
// the release build runs all 15.
constexpr int kSingleSignalTrials = testing::kSanitizerBuild ? 8 : 15;

TEST(SignalStress, SigintIntoOneRankStopsGracefullyAndResumesExactly) { stress(1, {SIGINT}, kSingleSignalTrials, 1); }
TEST(SignalStress, SigintIntoTwoRanksStopsGracefullyAndResumesExactly) { stress(2, {SIGINT}, kSingleSignalTrials, 2); }
TEST(SignalStress, SigintThenSigtermIntoOneRankEndsCleanly) { stress(1, {SIGINT, SIGTERM}, 5, 3); }
TEST(SignalStress, SigintThenSigtermIntoTwoRanksEndsCleanly) { stress(2, {SIGINT, SIGTERM}, 5, 4); }

}  // namespace
}  // namespace ddp
