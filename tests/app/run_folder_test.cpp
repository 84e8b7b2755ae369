// The run folder through the command line: an existing --version is never overwritten
// silently, concurrent runs each get their own folder, and no run writes outside its own.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "support/run_command.h"

namespace ddp {
namespace {

using testing::fresh_dir;
using testing::read_text;
using testing::run_command;

const std::string kBinary = DDPSCOPE_BINARY;
const std::string kQuick =
    " train --dataset-size 64 --batch-size 16 --hidden-size 8 --max-epochs 2 --progress-bar off"
    " --monitor-interval-ms 0";

TEST(RunFolder, AnExistingVersionIsRefusedUnlessOverwriteReplacesItWhole) {
  const auto dir = fresh_dir("run_folder_exists");
  const auto run = dir / "ddpscope_logs" / "version_0";
  const std::string named = "./ddpscope_logs/version_0";  // as the folder options name it
  ASSERT_EQ(run_command(kBinary + kQuick + " --version 0 --checkpoint-every-n-epochs 1", dir).exit_code, 0);
  const std::string metrics = read_text(run / "metrics.csv");

  const auto again = run_command(kBinary + kQuick + " --version 0 --lr 0.1", dir);
  EXPECT_EQ(again.exit_code, 2) << again.err;
  EXPECT_NE(again.err.find("--version: '" + named +
                           "' exists already; choose another, omit --version for the "
                           "next free one, or pass --overwrite"),
            std::string::npos)
      << again.err;
  EXPECT_EQ(read_text(run / "metrics.csv"), metrics);  // the first run's files are untouched

  const auto replaced = run_command(kBinary + kQuick + " --version 0 --lr 0.1 --overwrite", dir);
  ASSERT_EQ(replaced.exit_code, 0) << replaced.err;
  EXPECT_FALSE(std::filesystem::exists(run / "checkpoints"));  // nothing of the first run is left
  EXPECT_NE(read_text(run / "hparams.yaml").find("lr: 0.1"), std::string::npos);

  const auto next = run_command(kBinary + kQuick, dir);  // no --version: the next free one
  ASSERT_EQ(next.exit_code, 0) << next.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "ddpscope_logs" / "version_1" / "summary.json"));
}

TEST(RunFolder, AnExistingVersionIsRefusedOnEveryRankWithExitTwo) {
  const auto dir = fresh_dir("run_folder_exists_ddp");
  ASSERT_EQ(run_command(kBinary + kQuick + " --version shared", dir).exit_code, 0);
  const auto r = run_command(kBinary + kQuick + " --devices 2 --version shared", dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("exists already; choose another"), std::string::npos) << r.err;
}

TEST(RunFolder, EightRunsStartedTogetherGetEightFolders) {
  const auto dir = fresh_dir("run_folder_concurrent");
  std::string script;
  for (int i = 0; i < 8; ++i) {
    const std::string n = std::to_string(i);
    script += "(" + kBinary + kQuick + " --seed " + n + " >out" + n + " 2>err" + n + "; echo $? >rc" + n + ") & ";
  }
  ASSERT_EQ(run_command("(" + script + "wait)", dir).exit_code, 0);
  std::set<std::string> seeds;
  for (int i = 0; i < 8; ++i) {
    const std::string n = std::to_string(i);
    EXPECT_EQ(read_text(dir / ("rc" + n)), "0\n") << read_text(dir / ("err" + n));
    const auto run = dir / "ddpscope_logs" / ("version_" + n);
    ASSERT_TRUE(std::filesystem::exists(run / "summary.json")) << run;
    const auto summary = nlohmann::json::parse(read_text(run / "summary.json"));
    seeds.insert(summary["config"]["seed"].dump());
    EXPECT_NE(read_text(run / "hparams.yaml").find("seed: " + summary["config"]["seed"].dump()), std::string::npos);
  }
  EXPECT_EQ(seeds.size(), 8u);  // each folder holds one run, and each run has a folder
  EXPECT_FALSE(std::filesystem::exists(dir / "ddpscope_logs" / "version_8"));
}

TEST(RunFolder, DotsAsNameOrVersionAreRefusedAndNothingIsWrittenOutside) {
  const auto dir = fresh_dir("run_folder_dots");
  for (const std::string& args : {std::string("--version .."), std::string("--version ."), std::string("--name ..")}) {
    const auto r = run_command(kBinary + kQuick + " " + args, dir / "cwd");
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    const std::string option = args.substr(0, args.find(' '));
    const std::string value = args.substr(args.find(' ') + 1);
    EXPECT_NE(r.err.find(option + ": '" + value + "' is not accepted; expected a"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("folder name without '/', other than '.' and '..'"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "version_0"));
  EXPECT_FALSE(std::filesystem::exists(dir / "cwd" / "hparams.yaml"));
  EXPECT_FALSE(std::filesystem::exists(dir / "cwd" / "ddpscope_logs"));
}

}  // namespace
}  // namespace ddp
