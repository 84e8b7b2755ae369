#include "log/tensorboard_logger.h"

#include <gtest/gtest.h>

#include <sys/resource.h>
#include <unistd.h>
#include "support/file_size_limit.h"

#include <bit>
#include <chrono>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "ddpscope/error.h"
#include "log/crc32c.h"
#include "support/run_command.h"

namespace ddp {
namespace {

namespace fs = std::filesystem;

class TensorBoardLoggerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = testing::fresh_dir(std::string("log_tensorboard_") + test->name() + "_" + std::to_string(::getpid()));
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

uint64_t little_endian(std::string_view bytes) {
  uint64_t value = 0;
  for (std::size_t i = 0; i < bytes.size(); ++i) value |= uint64_t{static_cast<uint8_t>(bytes[i])} << (8 * i);
  return value;
}

// Splits a TFRecord file into payloads, checking the framing and both CRCs of every record;
// a torn or corrupt record fails the test.
std::vector<std::string> read_records(const fs::path& path) {
  const std::string bytes = testing::read_text(path);
  std::vector<std::string> payloads;
  std::size_t at = 0;
  while (at < bytes.size()) {
    EXPECT_GE(bytes.size() - at, 12u) << "truncated header at byte " << at;
    if (bytes.size() - at < 12) break;
    const std::string_view length_bytes(bytes.data() + at, 8);
    const uint64_t length = little_endian(length_bytes);
    EXPECT_EQ(little_endian(std::string_view(bytes.data() + at + 8, 4)), mask_crc32c(crc32c(length_bytes)))
        << "length CRC at byte " << at;
    EXPECT_GE(bytes.size() - at - 12, length + 4) << "truncated record at byte " << at;
    if (bytes.size() - at - 12 < length + 4) break;
    const std::string payload = bytes.substr(at + 12, length);
    EXPECT_EQ(little_endian(std::string_view(bytes.data() + at + 12 + length, 4)), mask_crc32c(crc32c(payload)))
        << "payload CRC at byte " << at;
    payloads.push_back(payload);
    at += 12 + length + 4;
  }
  return payloads;
}

// One field printed by `protoc --decode_raw`: its path of field numbers ("5.1.2") and value.
struct RawField {
  std::string path;
  std::string value;
};

// Decodes a message with protoc, an implementation independent of ours. Note: decode_raw
// prints a length-delimited field as a nested message whenever its bytes happen to parse as
// one, so the tags in these tests start with letters that cannot ('t', 'v', 'd', 'n').
std::vector<RawField> decode_raw(const std::string& payload, const fs::path& scratch) {
  { std::ofstream(scratch, std::ios::binary) << payload; }
  const std::string command = "protoc --decode_raw < '" + scratch.string() + "'";
  FILE* pipe = ::popen(command.c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  if (pipe == nullptr) return {};
  std::string text;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0;) text.append(buffer, n);
  EXPECT_EQ(::pclose(pipe), 0) << "protoc --decode_raw failed (is protobuf-compiler installed?):\n" << text;

  std::vector<RawField> fields;
  std::vector<std::string> stack;
  std::istringstream lines(text);
  static const std::regex kLeaf(R"(\s*(\d+): (.*))"), kOpen(R"(\s*(\d+) \{)"), kClose(R"(\s*\})");
  std::smatch m;
  for (std::string line; std::getline(lines, line);) {
    std::string prefix;
    for (const std::string& s : stack) prefix += s + ".";
    if (std::regex_match(line, m, kLeaf)) {
      fields.push_back({prefix + m[1].str(), m[2].str()});
    } else if (std::regex_match(line, m, kOpen)) {
      stack.push_back(m[1].str());
    } else if (std::regex_match(line, m, kClose) && !stack.empty()) {
      stack.pop_back();
    } else {
      ADD_FAILURE() << "unexpected protoc line: " << line;
    }
  }
  return fields;
}

std::vector<std::string> values_at(const std::vector<RawField>& fields, const std::string& path) {
  std::vector<std::string> values;
  for (const RawField& f : fields) {
    if (f.path == path) values.push_back(f.value);
  }
  return values;
}

// protoc prints fixed32 and fixed64 fields as hexadecimal bit patterns: 1.0f is 0x3f800000.
float fixed32_as_float(const std::string& text) {
  return std::bit_cast<float>(static_cast<uint32_t>(std::stoul(text, nullptr, 16)));
}
double fixed64_as_double(const std::string& text) { return std::bit_cast<double>(std::stoull(text, nullptr, 16)); }

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

struct LoggedEvent {
  int64_t step;
  Metrics metrics;
};

const std::vector<LoggedEvent> kEvents = {
    {0, {{"train_loss", 1.0}}},
    {7, {{"train_loss", 0.25}, {"val_loss", -3.5}, {"device_0_utilization", 37.5}}},
    {12345678901, {{"train_loss", 0.1}, {"nan_metric", std::nan("")}}},  // a many-byte varint step
};

TEST_F(TensorBoardLoggerTest, FileIsNamedWithTimeAndHost) {
  const double before = std::floor(now_seconds());
  TensorBoardLogger logger(dir_);
  const double after = now_seconds();
  char host[HOST_NAME_MAX + 1] = {};
  ASSERT_EQ(::gethostname(host, sizeof(host) - 1), 0);
  std::smatch m;
  const std::string name = logger.path().filename().string();
  ASSERT_TRUE(std::regex_match(name, m, std::regex(R"(events\.out\.tfevents\.(\d+)\.(.+))"))) << name;
  EXPECT_GE(std::stod(m[1].str()), before);
  EXPECT_LE(std::stod(m[1].str()), after);
  EXPECT_EQ(m[2].str(), host);
  EXPECT_EQ(logger.path().parent_path(), dir_);
  EXPECT_TRUE(fs::exists(logger.path())) << "created at construction, with its version record";
}

TEST_F(TensorBoardLoggerTest, RecordsVerifyAndDecodeWithProtoc) {
  const double before = now_seconds();
  TensorBoardLogger logger(dir_);
  for (const LoggedEvent& e : kEvents) logger.log_metrics(e.metrics, 3, e.step);
  EXPECT_EQ(read_records(logger.path()).size(), 1u) << "nothing but the version record before flush";
  logger.flush();
  const double after = now_seconds();

  const std::vector<std::string> records = read_records(logger.path());
  ASSERT_EQ(records.size(), 1 + kEvents.size());

  const std::vector<RawField> header = decode_raw(records[0], dir_ / "scratch.bin");
  ASSERT_EQ(header.size(), 2u);
  EXPECT_EQ(values_at(header, "3"), std::vector<std::string>{"\"brain.Event:2\""});
  ASSERT_EQ(values_at(header, "1").size(), 1u);
  const double version_time = fixed64_as_double(values_at(header, "1")[0]);
  EXPECT_GE(version_time, before);
  EXPECT_LE(version_time, after);

  for (std::size_t i = 0; i < kEvents.size(); ++i) {
    SCOPED_TRACE("event " + std::to_string(i));
    const std::vector<RawField> fields = decode_raw(records[i + 1], dir_ / "scratch.bin");
    ASSERT_EQ(values_at(fields, "1").size(), 1u);
    const double wall_time = fixed64_as_double(values_at(fields, "1")[0]);
    EXPECT_GE(wall_time, version_time);
    EXPECT_LE(wall_time, after);
    EXPECT_EQ(values_at(fields, "2"), std::vector<std::string>{std::to_string(kEvents[i].step)});
    const std::vector<std::string> tags = values_at(fields, "5.1.1");
    const std::vector<std::string> values = values_at(fields, "5.1.2");
    ASSERT_EQ(tags.size(), kEvents[i].metrics.size());
    ASSERT_EQ(values.size(), kEvents[i].metrics.size());
    for (std::size_t k = 0; k < tags.size(); ++k) {
      const auto& [name, value] = kEvents[i].metrics[k];
      EXPECT_EQ(tags[k], "\"" + name + "\"");
      const float decoded = fixed32_as_float(values[k]);
      if (std::isnan(value)) {
        EXPECT_TRUE(std::isnan(decoded)) << values[k];
      } else {
        EXPECT_EQ(decoded, static_cast<float>(value)) << name << " printed as " << values[k];
      }
    }
    // Exactly wall_time, step, and the summary: no epoch scalar or other extra field.
    EXPECT_EQ(fields.size(), 2 + 2 * tags.size());
  }
}

TEST_F(TensorBoardLoggerTest, FlushAppendsOnlyNewRecords) {
  TensorBoardLogger logger(dir_);
  logger.log_metrics({{"train_loss", 2.0}}, 0, 1);
  logger.flush();
  logger.flush();  // nothing new: nothing written
  logger.log_metrics({{"train_loss", 1.5}}, 1, 2);
  logger.flush();
  const std::vector<std::string> records = read_records(logger.path());
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(values_at(decode_raw(records[2], dir_ / "scratch.bin"), "2"), std::vector<std::string>{"2"});
}

TEST_F(TensorBoardLoggerTest, DestructorFlushes) {
  fs::path path;
  {
    TensorBoardLogger logger(dir_);
    path = logger.path();
    logger.log_metrics({{"train_loss", 2.0}}, 0, 1);
  }
  EXPECT_EQ(read_records(path).size(), 2u);
}

TEST_F(TensorBoardLoggerTest, UnwritableFolderIsAnErrorNamingTheFile) {
  const fs::path not_a_folder = dir_ / "regular_file";
  std::ofstream(not_a_folder) << "x";
  try {
    TensorBoardLogger logger(not_a_folder);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kOther);
    const std::string message = e.what();
    EXPECT_NE(message.find("cannot create '" + (not_a_folder / "events.out.tfevents.").string()), std::string::npos)
        << message;
    EXPECT_NE(message.find("Not a directory"), std::string::npos) << message;
  }
}

using testing::remove_file_size_limit;
using testing::set_file_size_limit;

// In a forked child: a flush that hits the file size limit throws an Error naming the file,
// leaves the file exactly as the last good flush left it, and keeps its records, so a flush
// after the limit is lifted writes them all, once. The parent then checks the final file.
TEST_F(TensorBoardLoggerTest, WriteFailureKeepsFileValidAndLosesNothing) {
  const fs::path run_dir = dir_;
  fs::path path;
  EXPECT_EXIT(
      {
        TensorBoardLogger logger(run_dir);
        std::ofstream(run_dir / "path.txt") << logger.path().string();
        logger.log_metrics({{"train_loss", 1.0}}, 0, 0);
        logger.flush();
        const std::string before = testing::read_text(logger.path());
        for (int step = 1; step <= 100; ++step) logger.log_metrics({{"train_loss", 1.0 / step}}, 0, step);
        set_file_size_limit(before.size() + 100);  // fails mid-way through a record
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
      ::testing::ExitedWithCode(0), R"(cannot write '.*/events\.out\.tfevents\.[0-9]+\..*': File too large)");
  path = testing::read_text(dir_ / "path.txt");
  const std::vector<std::string> records = read_records(path);
  ASSERT_EQ(records.size(), 102u);
  for (int step = 0; step <= 100; step += 25) {
    EXPECT_EQ(values_at(decode_raw(records[step + 1], dir_ / "scratch.bin"), "2"),
              std::vector<std::string>{std::to_string(step)});
  }
}

}  // namespace
}  // namespace ddp
