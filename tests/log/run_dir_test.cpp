// The run folder: exclusive creation, so that runs started together never share a folder.
#include "log/run_dir.h"

#include <gtest/gtest.h>

#include <fstream>
#include <latch>
#include <set>
#include <thread>
#include <vector>

#include "ddpscope/error.h"
#include "support/run_command.h"

namespace ddp {
namespace {

TEST(RunDir, RunsStartedAtTheSameInstantEachGetTheirOwnVersion) {
  const auto root = testing::fresh_dir("run_dir_race");
  constexpr int kRuns = 8;
  for (int round = 0; round < 4; ++round) {
    std::vector<std::filesystem::path> dirs(kRuns);
    std::latch start(kRuns);
    std::vector<std::thread> runs;
    for (int i = 0; i < kRuns; ++i) {
      runs.emplace_back([&, i] {
        start.arrive_and_wait();  // all scan for the next free number together
        dirs[i] = make_run_dir(root.string(), "logs", "");
      });
    }
    for (std::thread& t : runs) t.join();
    const std::set<std::filesystem::path> distinct(dirs.begin(), dirs.end());
    EXPECT_EQ(distinct.size(), static_cast<std::size_t>(kRuns)) << "round " << round;
  }
  EXPECT_TRUE(std::filesystem::exists(root / "logs" / "version_31"));
  EXPECT_FALSE(std::filesystem::exists(root / "logs" / "version_32"));
}

TEST(RunDir, ANamedVersionThatExistsIsRefusedOrReplacedWithOverwrite) {
  const auto root = testing::fresh_dir("run_dir_named");
  const auto dir = make_run_dir(root.string(), "logs", "7");
  EXPECT_EQ(dir, root / "logs" / "version_7");
  std::ofstream(dir / "old.csv") << "from another run";
  try {
    make_run_dir(root.string(), "logs", "7");
    FAIL() << "an existing version was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--version: '" + dir.string() + "' exists already"), std::string::npos)
        << e.what();
  }
  EXPECT_TRUE(std::filesystem::exists(dir / "old.csv"));
  EXPECT_EQ(make_run_dir(root.string(), "logs", "7", /*overwrite=*/true), dir);
  EXPECT_FALSE(std::filesystem::exists(dir / "old.csv"));
}

// A file where a version's folder would go is that version taken, as a folder is: named, it is
// refused as existing (it blamed --default-root-dir); unnamed, the next number is used.
TEST(RunDir, AFileNamedAsAVersionIsThatVersionTaken) {
  const auto root = testing::fresh_dir("run_dir_file");
  std::filesystem::create_directories(root / "logs");
  std::ofstream(root / "logs" / "version_0") << "not a folder";
  try {
    make_run_dir(root.string(), "logs", "0");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "--version: '" + (root / "logs" / "version_0").string() +
                                         "' exists already; choose another, omit --version for the next free one, "
                                         "or pass --overwrite");
  }
  EXPECT_EQ(make_run_dir(root.string(), "logs", ""), root / "logs" / "version_1");
}

}  // namespace
}  // namespace ddp
