#include "log/jsonl_logger.h"

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>
#include "support/file_size_limit.h"

#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "ddpscope/error.h"
#include "support/run_command.h"

namespace ddp {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

class JsonlLoggerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = testing::fresh_dir(std::string("log_jsonl_") + test->name() + "_" + std::to_string(::getpid()));
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// Every line of the file, each required to be whole (newline-terminated) and valid JSON.
std::vector<Json> read_lines(const fs::path& path) {
  const std::string text = testing::read_text(path);
  EXPECT_TRUE(text.empty() || text.back() == '\n') << "last line torn";
  std::vector<Json> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    try {
      lines.push_back(Json::parse(line));
    } catch (const std::exception& e) {
      ADD_FAILURE() << "line " << lines.size() + 1 << " does not parse: " << e.what() << "\n" << line;
    }
  }
  return lines;
}

std::vector<std::string> keys_of(const Json& object) {
  std::vector<std::string> keys;
  for (const auto& item : object.items()) keys.push_back(item.key());
  return keys;
}

TEST_F(JsonlLoggerTest, OneObjectPerEventWithEpochAndStepFirst) {
  JsonlLogger logger(dir_);
  EXPECT_EQ(logger.path(), dir_ / "metrics.jsonl");
  EXPECT_TRUE(fs::exists(logger.path())) << "created at construction";
  logger.log_metrics({{"train_loss", 0.1}, {"device_0_utilization", 37.5}}, 0, 7);
  logger.log_metrics({{"val_loss", std::nan("")},
                      {"inf", std::numeric_limits<double>::infinity()},
                      {"minus_inf", -std::numeric_limits<double>::infinity()}},
                     1, 12345678901);
  EXPECT_EQ(testing::read_text(logger.path()), "") << "nothing written before flush";
  logger.flush();

  EXPECT_EQ(testing::read_text(logger.path()),
            "{\"epoch\":0,\"step\":7,\"train_loss\":0.1,\"device_0_utilization\":37.5}\n"
            "{\"epoch\":1,\"step\":12345678901,\"val_loss\":null,\"inf\":null,\"minus_inf\":null}\n");
  const std::vector<Json> lines = read_lines(logger.path());
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(keys_of(lines[0]), (std::vector<std::string>{"epoch", "step", "train_loss", "device_0_utilization"}));
  EXPECT_EQ(lines[0]["train_loss"].get<double>(), 0.1) << "doubles round-trip exactly";
  EXPECT_TRUE(lines[1]["val_loss"].is_null());
}

TEST_F(JsonlLoggerTest, FlushAppendsAndDestructorFlushes) {
  {
    JsonlLogger logger(dir_);
    logger.log_metrics({{"train_loss", 2.0}}, 0, 1);
    logger.flush();
    logger.flush();  // nothing new: nothing written
    logger.log_metrics({{"train_loss", 1.5}}, 1, 2);
  }
  const std::vector<Json> lines = read_lines(dir_ / "metrics.jsonl");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1]["step"], 2);
  EXPECT_EQ(lines[1]["train_loss"], 1.5);
}

TEST_F(JsonlLoggerTest, UnwritableFolderIsAnErrorNamingTheFile) {
  const fs::path not_a_folder = dir_ / "regular_file";
  std::ofstream(not_a_folder) << "x";
  try {
    JsonlLogger logger(not_a_folder);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kOther);
    const std::string message = e.what();
    EXPECT_NE(message.find("cannot create '" + (not_a_folder / "metrics.jsonl").string()), std::string::npos)
        << message;
  }
}

using testing::remove_file_size_limit;
using testing::set_file_size_limit;

// In a forked child: a flush that hits the file size limit throws an Error naming the file,
// leaves the file as the last good flush left it, and keeps its lines for the next flush.
TEST_F(JsonlLoggerTest, WriteFailureKeepsLinesWholeAndLosesNothing) {
  const fs::path run_dir = dir_;
  EXPECT_EXIT(
      {
        JsonlLogger logger(run_dir);
        logger.log_metrics({{"train_loss", 1.0}}, 0, 0);
        logger.flush();
        const std::string before = testing::read_text(logger.path());
        for (int step = 1; step <= 100; ++step) logger.log_metrics({{"train_loss", 1.0 / step}}, 0, step);
        set_file_size_limit(before.size() + 100);  // fails mid-way through a line
        try {
          logger.flush();
          std::_Exit(10);
        } catch (const Error& e) {
          std::fprintf(stderr, "%s\n", e.what());
        }
        if (testing::read_text(logger.path()) != before) std::_Exit(11);
        remove_file_size_limit();
        logger.flush();
        std::_Exit(0);
      },
      ::testing::ExitedWithCode(0), R"(cannot write '.*/metrics\.jsonl': File too large)");
  const std::vector<Json> lines = read_lines(dir_ / "metrics.jsonl");
  ASSERT_EQ(lines.size(), 101u);
  for (int step = 0; step <= 100; ++step) EXPECT_EQ(lines[step]["step"], step);
}

}  // namespace
}  // namespace ddp
