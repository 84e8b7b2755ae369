#include "log/csv_logger.h"

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>
#include "support/file_size_limit.h"

#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ddpscope/error.h"
#include "support/run_command.h"

namespace ddp {
namespace {

namespace fs = std::filesystem;

class CsvLoggerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = testing::fresh_dir(std::string("log_csv_") + test->name() + "_" + std::to_string(::getpid()));
    path_ = dir_ / "metrics.csv";
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_, path_;
};

// Rows are whole: newline-terminated, each with as many cells as the header.
void expect_whole_rows(const std::string& text) {
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n') << "last row torn";
  std::istringstream in(text);
  std::string header;
  std::getline(in, header);
  const auto cells = [](const std::string& line) { return std::count(line.begin(), line.end(), ',') + 1; };
  for (std::string row; std::getline(in, row);) EXPECT_EQ(cells(row), cells(header)) << row;
}

TEST_F(CsvLoggerTest, HeaderIsTheUnionOfKeysWithEmptyCells) {
  CsvLogger logger(path_);
  logger.log_metrics({{"train_loss", 0.5}, {"device_0_utilization", 37.5}}, 0, 3);
  logger.log_metrics({{"val_loss", 0.25}, {"train_loss", 0.125}}, 0, 3);
  logger.log_metrics({{"device_0_utilization", 100}}, 1, 6);
  EXPECT_FALSE(fs::exists(path_)) << "nothing written before flush";
  logger.flush();
  EXPECT_EQ(testing::read_text(path_),
            "epoch,step,train_loss,device_0_utilization,val_loss\n"
            "0,3,0.5,37.5,\n"
            "0,3,0.125,,0.25\n"
            "1,6,,100,\n");
}

TEST_F(CsvLoggerTest, NewKeyAfterAFlushRewritesTheFile) {
  CsvLogger logger(path_);
  logger.log_metrics({{"train_loss", 0.5}}, 0, 1);
  logger.flush();
  logger.log_metrics({{"train_loss", 0.25}}, 0, 2);
  logger.flush();
  EXPECT_EQ(testing::read_text(path_), "epoch,step,train_loss\n0,1,0.5\n0,2,0.25\n");
  logger.log_metrics({{"val_loss", 2.5}}, 0, 2);
  logger.flush();
  EXPECT_EQ(testing::read_text(path_), "epoch,step,train_loss,val_loss\n0,1,0.5,\n0,2,0.25,\n0,2,,2.5\n");
  EXPECT_FALSE(fs::exists(path_.string() + ".tmp"));
}

TEST_F(CsvLoggerTest, DestructorFlushes) {
  {
    CsvLogger logger(path_);
    logger.log_metrics({{"train_loss", 0.5}}, 0, 1);
  }
  EXPECT_EQ(testing::read_text(path_), "epoch,step,train_loss\n0,1,0.5\n");
}

TEST_F(CsvLoggerTest, UnwritableFolderIsAnErrorNamingTheFile) {
  const fs::path not_a_folder = dir_ / "regular_file";
  std::ofstream(not_a_folder) << "x";
  CsvLogger logger(not_a_folder / "metrics.csv");
  logger.log_metrics({{"train_loss", 0.5}}, 0, 1);
  try {
    logger.flush();
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kOther);
    const std::string message = e.what();
    EXPECT_NE(message.find("cannot create '" + (not_a_folder / "metrics.csv").string()), std::string::npos) << message;
  }
}

using testing::remove_file_size_limit;
using testing::set_file_size_limit;

// In a forked child, appending rows (no new key) past the file size limit: an Error naming
// the file, the file as the last good flush left it, and the rows written by the next flush.
TEST_F(CsvLoggerTest, AppendFailureKeepsRowsWholeAndLosesNothing) {
  const fs::path path = path_;
  EXPECT_EXIT(
      {
        CsvLogger logger(path);
        logger.log_metrics({{"train_loss", 1.0}}, 0, 0);
        logger.flush();
        const std::string before = testing::read_text(path);
        for (int step = 1; step <= 100; ++step) logger.log_metrics({{"train_loss", 1.0 / step}}, 0, step);
        set_file_size_limit(before.size() + 100);  // fails mid-way through a row
        try {
          logger.flush();
          std::_Exit(10);
        } catch (const Error& e) {
          std::fprintf(stderr, "%s\n", e.what());
        }
        if (testing::read_text(path) != before) std::_Exit(11);
        remove_file_size_limit();
        logger.flush();
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), R"(cannot write '.*/metrics\.csv': File too large)");
  const std::string text = testing::read_text(path_);
  expect_whole_rows(text);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1 + 101);
}

// The same when a new key makes the flush rewrite the whole file: the old file stays, no
// temporary file is left behind, and the next flush writes everything.
TEST_F(CsvLoggerTest, RewriteFailureKeepsTheOldFileAndLosesNothing) {
  const fs::path path = path_;
  EXPECT_EXIT(
      {
        CsvLogger logger(path);
        logger.log_metrics({{"train_loss", 1.0}}, 0, 0);
        logger.flush();
        const std::string before = testing::read_text(path);
        for (int step = 1; step <= 100; ++step) logger.log_metrics({{"val_loss", 1.0 / step}}, 0, step);
        set_file_size_limit(before.size() + 100);
        try {
          logger.flush();
          std::_Exit(10);
        } catch (const Error& e) {
          std::fprintf(stderr, "%s\n", e.what());
        }
        if (testing::read_text(path) != before) std::_Exit(11);
        if (fs::exists(path.string() + ".tmp")) std::_Exit(12);
        remove_file_size_limit();
        logger.flush();
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), R"(cannot write '.*/metrics\.csv\.tmp': File too large)");
  const std::string text = testing::read_text(path_);
  expect_whole_rows(text);
  EXPECT_EQ(text.substr(0, text.find('\n')), "epoch,step,train_loss,val_loss");
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1 + 101);
}

}  // namespace
}  // namespace ddp
