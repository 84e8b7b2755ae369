// srun and sbatch under a real Slurm (scripts/local-slurm: one node, Open MPI's ranks wired by
// PMIx), as the README and docs/usage.md show them.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "support/local_slurm.h"
#include "support/run_command.h"

namespace ddp {
namespace {

namespace fs = std::filesystem;
using testing::LocalSlurm;

nlohmann::json summary_of(const fs::path& dir, int version = 0) {
  return nlohmann::json::parse(
      testing::read_text(dir / ("ddpscope_logs/version_" + std::to_string(version)) / "summary.json"));
}

// What is left of a run's processes (the unique --default-root-dir names them).
std::string left_of(const std::string& marker) {
  return testing::run_command("pgrep -af -- '" + marker + "' | grep -v pgrep || true", testing::fresh_dir("pgrep")).out;
}

TEST_F(LocalSlurm, SrunRanksWithBatchBEqualOneRankWithBatch2B) {
  const std::string common = " train --max-epochs 3 --dataset-size 512 --progress-bar off --logger none";
  const fs::path two = testing::fresh_dir("slurm_two_ranks"), one = testing::fresh_dir("slurm_one_rank");
  const auto ranks = testing::run_command(
      slurm("srun -n 2 " + std::string(DDPSCOPE_BINARY) + common + " --devices 2 --batch-size 64"), two);
  ASSERT_EQ(ranks.exit_code, 0) << ranks.err;
  const auto single = testing::run_command(std::string(DDPSCOPE_BINARY) + common + " --batch-size 128", one);
  ASSERT_EQ(single.exit_code, 0) << single.err;
  const nlohmann::json a = summary_of(two), b = summary_of(one);
  EXPECT_EQ(a["world_size"], 2);
  const double val_a = a["final"]["val_loss"], val_b = b["final"]["val_loss"];
  EXPECT_NEAR(val_a, val_b, 1e-5 * std::abs(val_b));
}

// scancel sends every task SIGTERM: each rank stops at its next optimizer step with a
// checkpoint, and --ckpt-path resumes the job from it.
TEST_F(LocalSlurm, ScancelStopsTheJobWithACheckpointAndItResumes) {
  const fs::path dir = testing::fresh_dir("slurm_scancel");
  const std::string train = std::string(DDPSCOPE_BINARY) +
                            " train --devices 2 --progress-bar off --checkpoint-every-n-epochs 1 --version 0"
                            " --max-epochs 100000";
  const std::string cancel =
      "(for i in $(seq 300); do ls ddpscope_logs/version_0/checkpoints/epoch=2-* >/dev/null 2>&1 && break; sleep 0.1; "
      "done; " +
      slurm("scancel --name scancel-test") + ") & ";
  const auto run = testing::run_command(
      "{ " + cancel + slurm("srun -n 2 --job-name scancel-test " + train) + "; echo $? > rc; wait; }", dir);
  EXPECT_EQ(std::stoi(testing::read_text(dir / "rc")), 143) << run.err;  // 128 + SIGTERM, from every task
  const std::string said = "ddpscope: error: stopped by SIGTERM at epoch ";
  const std::size_t at = run.err.find(said);
  ASSERT_NE(at, std::string::npos) << run.err;
  const fs::path last = dir / "ddpscope_logs/version_0/checkpoints/last.safetensors";
  ASSERT_TRUE(fs::exists(last));
  EXPECT_FALSE(fs::exists(dir / "ddpscope_logs/version_0/checkpoints/last.safetensors.tmp"));
  const std::size_t step_at = run.err.find("optimizer step ", at) + std::string("optimizer step ").size();
  const int64_t steps = std::stoll(run.err.substr(step_at));
  const auto resumed =
      testing::run_command(slurm("srun -n 2 " + std::string(DDPSCOPE_BINARY) +
                                 " train --devices 2 --progress-bar off --version 1 --max-epochs 100000 --max-steps " +
                                 std::to_string(steps + 3) + " --ckpt-path " + last.string()),
                           dir);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(summary_of(dir, 1)["optimizer_steps"], steps + 3);
}

// A task killed (kill -9) ends the job step: Slurm's PMIx plugin cancels the other tasks at
// once, srun fails, and no process of the job is left.
TEST_F(LocalSlurm, AKilledTaskEndsTheJobAndLeavesNothing) {
  const fs::path dir = testing::fresh_dir("slurm_killed");
  const std::string marker = "slurm-killed-task-run";
  const std::string train = std::string(DDPSCOPE_BINARY) + " train --devices 2 --progress-bar off --max-epochs 100000" +
                            " --default-root-dir " + marker;
  const std::string kill =
      "(for i in $(seq 300); do [ $(pgrep -fc -- 'train --devices 2 --progress-bar off --max-epochs 100000 "
      "--default-root-dir " +
      marker +
      "') -ge 3 ] && break; sleep 0.1; done; sleep 2; "
      "pkill -9 -n -f -- '^" +
      std::string(DDPSCOPE_BINARY) + " train --devices 2.*" + marker + "'; date +%s.%N > killed_at) & ";
  const auto run = testing::run_command(
      "{ " + kill + slurm("srun -n 2 " + train) + "; echo $? > rc; date +%s.%N > end_at; wait; }", dir);
  // 137: srun's code for the tasks Slurm killed (not ddpscope's 4: no task lives to say it).
  EXPECT_EQ(std::stoi(testing::read_text(dir / "rc")), 137) << run.err;
  const double seconds =
      std::stod(testing::read_text(dir / "end_at")) - std::stod(testing::read_text(dir / "killed_at"));
  EXPECT_LT(seconds, 30.0) << run.err;
  std::string left;
  for (int tries = 0; tries < 50 && !(left = left_of(marker)).empty(); ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(left, "") << "processes of the job left";
}

// docs/usage.md's sbatch script, exactly as written there.
TEST_F(LocalSlurm, TheSbatchScriptOfTheDocsRuns) {
  const std::string usage = testing::read_text(fs::path(DDPSCOPE_SOURCE_DIR) / "docs/usage.md");
  const std::size_t marker = usage.find("#SBATCH --job-name=ddpscope-seed");
  ASSERT_NE(marker, std::string::npos) << "docs/usage.md has no sbatch script";
  const std::size_t start = usage.rfind("#!/bin/bash", marker), end = usage.find("```", marker);
  ASSERT_NE(start, std::string::npos);
  const fs::path dir = testing::fresh_dir("slurm_sbatch");
  std::ofstream(dir / "seed.sbatch") << usage.substr(start, end - start);
  const std::string path = "PATH=" + fs::path(DDPSCOPE_BINARY).parent_path().string() + ":$PATH ";
  const auto run = testing::run_command(slurm(path + "sbatch --wait seed.sbatch"), dir);
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  std::string output;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().filename().string().rfind("ddpscope-seed-", 0) == 0) output = testing::read_text(entry.path());
  }
  EXPECT_NE(output.find("Training completed in"), std::string::npos) << output;
  EXPECT_EQ(summary_of(dir)["world_size"], 2);
}

}  // namespace
}  // namespace ddp
