// A large trace read in parts on every core gives exactly what one pass gives, and a file that
// cannot be cut between events is read in one pass.
#include "analyze/trace_parts.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "analyze/part_sources.h"
#include "analyze/trace_reader.h"
#include "ddpscope/error.h"
#include "support/run_command.h"

namespace ddp {
namespace {

using ::ddp::testing::fresh_dir;
namespace fs = std::filesystem;

std::string inflated(const fs::path& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  std::string text;
  char chunk[1 << 16];
  for (int got; (got = gzread(f, chunk, sizeof chunk)) > 0;) text.append(chunk, static_cast<std::size_t>(got));
  gzclose(f);
  return text;
}

fs::path write(const fs::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

// Everything later stages read of a file, compared field by field.
void expect_same(TraceFile& parts, TraceFile& one_pass) {
  EXPECT_EQ(parts.dialect, one_pass.dialect);
  EXPECT_EQ(parts.distributed.rank, one_pass.distributed.rank);
  EXPECT_EQ(parts.distributed.world_size, one_pass.distributed.world_size);
  EXPECT_EQ(parts.distributed.backend, one_pass.distributed.backend);
  ASSERT_EQ(parts.names.size(), one_pass.names.size());
  for (uint32_t i = 0; i < parts.names.size(); ++i) ASSERT_EQ(parts.names[i], one_pass.names[i]) << i;
  ASSERT_EQ(parts.threads.size(), one_pass.threads.size());
  for (uint32_t i = 0; i < parts.threads.size(); ++i) ASSERT_EQ(parts.threads[i], one_pass.threads[i]) << i;
  EXPECT_EQ(parts.thread_pid, one_pass.thread_pid);
  EXPECT_EQ(parts.gpu_kernels, one_pass.gpu_kernels);
  EXPECT_EQ(parts.collective_kernels, one_pass.collective_kernels);
  ASSERT_EQ(parts.step_markers.size(), one_pass.step_markers.size());
  const std::vector<TraceEvent> a = parts.events.sorted(), b = one_pass.events.sorted();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].start_ns, b[i].start_ns) << i;
    ASSERT_EQ(a[i].duration_ns, b[i].duration_ns) << i;
    ASSERT_EQ(a[i].name, b[i].name) << i;
    ASSERT_EQ(a[i].thread, b[i].thread) << i;
    ASSERT_EQ(a[i].process_group, b[i].process_group) << i;
    ASSERT_EQ(a[i].bytes, b[i].bytes) << i;
    ASSERT_EQ(a[i].correlation, b[i].correlation) << i;
    ASSERT_EQ(a[i].kind, b[i].kind) << i;
  }
}

// A small file read in parts of 64 bytes: where `readable`, what one pass reads (its events
// named); else refused in parts and by one pass alike.
void expect_parts_read_or_refuse_as_one_pass(const fs::path& dir, const std::string& text, bool readable) {
  const std::string path = write(dir / "t.json", text).string();
  std::optional<TraceFile> parts = read_trace_in_parts(path, 64);
  EXPECT_EQ(parts.has_value(), readable);
  if (readable && parts) {
    TraceFile one_pass = read_trace_text(text, path);
    ASSERT_GE(one_pass.names.size(), 2U);
    expect_same(*parts, one_pass);
  } else {
    EXPECT_THROW(read_trace_text(text, path), DataError);
  }
}

TEST(TraceParts, CutsBetweenTwoEventsOfTheArray) {
  const std::string kineto = "{\n  \"traceEvents\": [\n  {\n    \"ph\": \"X\"\n  },\n  {\n    \"ph\": \"X\"\n  }\n";
  EXPECT_EQ(last_cut(kineto), kineto.rfind('{'));
  const std::string compact = "[{\"a\": {\"b\": 1}},\n{\"a\": {\"b\": 2}},\r\n  {\"a\": 3}";
  EXPECT_EQ(last_cut(compact), compact.rfind("{\"a\": 3"));
  // PyTorch's legacy array, one line: after "}," on the same line, where no line is to be had.
  const std::string one_line = R"([{"a": 1}, {"a": 2},{"a": 3}])";
  EXPECT_EQ(last_cut(one_line), one_line.rfind("{\"a\": 3"));
  EXPECT_EQ(last_cut(R"({"a": {"b": 1}, "c": {"d": 2}})"), std::string_view::npos);  // after a key
  EXPECT_EQ(last_cut("[[1], [2]]"), std::string_view::npos);
  EXPECT_EQ(last_cut("{\"traceEvents\": [\n  {\"a\": 1}"), std::string_view::npos);  // after "[", not ","
}

// Every committed trace (Kineto of torch 1.13 to 2.x, NCCL, gloo, ROCm, Lightning), plain and
// gzip, cut into parts of 64 KiB: hundreds of parts, each on its own thread.
TEST(TraceParts, EveryFixtureReadsInPartsAsInOnePass) {
  const fs::path fixtures = fs::path(DDPSCOPE_SOURCE_DIR) / "tests/analyze/fixtures";
  const auto dir = fresh_dir("trace_parts_fixtures");
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(fixtures)) {
    if (entry.path().extension() != ".gz") continue;
    SCOPED_TRACE(entry.path().string());
    const std::string text = inflated(entry.path());
    const fs::path plain = write(dir / "plain.json", text);
    TraceFile one_pass = read_trace_text(text, plain.string());
    std::optional<TraceFile> parts = read_trace_in_parts(plain.string(), std::size_t{64} << 10);
    ASSERT_TRUE(parts.has_value());
    expect_same(*parts, one_pass);
    std::optional<TraceFile> packed = read_trace_in_parts(entry.path().string(), std::size_t{64} << 10);
    ASSERT_TRUE(packed.has_value());
    expect_same(*packed, one_pass);
    ++files;
  }
  EXPECT_GE(files, 10);
}

// What stands after the events (distributedInfo, otherData) and the legacy bare array, in parts.
TEST(TraceParts, ReadsWhatFollowsTheEventsAndTheLegacyArray) {
  const auto dir = fresh_dir("trace_parts_dialects");
  std::ostringstream kineto, legacy;
  kineto << "{\"traceEvents\": [\n";
  legacy << "[";
  for (int i = 0; i < 4000; ++i) {
    const std::string event = R"({"ph": "X", "cat": "cpu_op", "name": "op)" + std::to_string(i % 37) +
                              R"(", "pid": 1, "tid": )" + std::to_string(i % 3) + R"(, "ts": )" +
                              std::to_string(4000 - i) + R"(, "dur": 2})";
    kineto << (i ? ",\n  " : "  ") << event;
    legacy << (i ? ", " : "") << event;  // one line, as torch 1.13 without Kineto writes it
  }
  kineto << "\n],\n\"distributedInfo\": {\"rank\": 2, \"world_size\": 4, \"backend\": \"gloo\"},\n"
            "\"otherData\": {\"producer\": \"ddpscope 1\"}}\n";
  legacy << "]\n";
  for (const std::string& text : {kineto.str(), legacy.str()}) {
    const fs::path path = write(dir / "t.json", text);
    TraceFile one_pass = read_trace_text(text, path.string());
    std::optional<TraceFile> parts = read_trace_in_parts(path.string(), 4096);
    ASSERT_TRUE(parts.has_value());
    expect_same(*parts, one_pass);
  }
  TraceFile one_pass = read_trace_text(kineto.str(), "t.json");
  EXPECT_EQ(one_pass.distributed.rank, 2);
  EXPECT_EQ(one_pass.dialect, TraceFile::Dialect::kDdpscope);
}

// The events share lines and each one's arguments hold a list of objects, one per line: every
// cut lands inside an event, the closing null proves it, and read_trace reads the file in one
// pass instead.
TEST(TraceParts, AFileCutInsideItsEventsIsReadInOnePass) {
  const auto dir = fresh_dir("trace_parts_inside");
  std::string text = "{\"traceEvents\": [\n";
  for (int i = 0; text.size() < (std::size_t{9} << 20); ++i) {
    text += (i ? ", " : "") + std::string(R"({"ph": "X", "name": "op", "pid": 1, "tid": 1, "ts": )") +
            std::to_string(i) + R"(, "dur": 1, "args": {"list": [{"k": 1},)" + "\n{\"k\": 2}]}}";
  }
  text += "\n]}\n";
  const fs::path path = write(dir / "inside.json", text);
  EXPECT_FALSE(read_trace_in_parts(path.string(), 4096).has_value());
  TraceFile whole = read_trace(path.string());
  TraceFile one_pass = read_trace_text(text, path.string());
  expect_same(whole, one_pass);
}

// A large file: read_trace reads it in parts as one pass reads it, and where it is damaged in its
// middle, says what one pass says, at the same byte.
TEST(TraceParts, ALargeFileIsReadAsOnePassReadsItAndItsDamageReportedAlike) {
  const auto dir = fresh_dir("trace_parts_damaged");
  std::string text = "{\"traceEvents\": [\n";
  for (int i = 0; text.size() < (std::size_t{9} << 20); ++i) {
    text += (i ? ",\n" : "") + std::string(R"({"ph": "X", "name": "op", "pid": 1, "tid": 1, "ts": )") +
            std::to_string(i) + R"(, "dur": 1})";
  }
  text += "\n]}\n";
  TraceFile whole = read_trace(write(dir / "whole.json", text).string());
  TraceFile one_pass = read_trace_text(text, (dir / "whole.json").string());
  expect_same(whole, one_pass);
  text[text.find(", \"dur\"", text.size() / 2)] = '@';
  const fs::path path = write(dir / "damaged.json", text);
  std::string parts_error = "no error", one_pass_error = "no error";
  try {
    read_trace(path.string());
  } catch (const DataError& e) {
    parts_error = e.what();
  }
  try {
    read_trace_text(text, path.string());
  } catch (const DataError& e) {
    one_pass_error = e.what();
  }
  EXPECT_NE(one_pass_error.find("not valid JSON at byte"), std::string::npos) << one_pass_error;
  EXPECT_EQ(parts_error, one_pass_error);
}

// Found by the fuzzer (its input is kept in its corpus): a control character inside a string
// makes a file that is not JSON, which one pass says; its parts must not read it.
TEST(TraceParts, AControlCharacterInAStringIsRefusedInPartsAsInOnePass) {
  const auto dir = fresh_dir("trace_parts_control");
  std::string input = ::ddp::testing::read_text(fs::path(DDPSCOPE_SOURCE_DIR) /
                                                "tests/fuzz/corpus/trace_fuzz/control_character_in_a_string");
  const std::string path =
      write(dir / "control.json", input.substr(1)).string();  // the first byte is the fuzzer's mode
  EXPECT_FALSE(read_trace_in_parts(path, 64).has_value());
  EXPECT_THROW(read_trace(path), DataError);
}

// A value the analysis never reads is still JSON to both parsers: nesting is counted alike (64
// containers open at most), a value that is not JSON is refused, and an escaped control
// character, which JSON allows, is read by both.
TEST(TraceParts, WhatTheAnalysisDoesNotReadIsCheckedAsTheOnePassChecksIt) {
  const auto dir = fresh_dir("trace_parts_unread");
  const auto event_with = [](const std::string& extra) {
    return R"({"traceEvents": [{"ph": "X", "name": "op", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "zz": )" + extra +
           "}]}";
  };
  const auto nested = [](int levels) { return std::string(levels, '[') + std::string(levels, ']'); };
  for (const auto& [text, readable] :
       std::vector<std::pair<std::string, bool>>{{event_with(nested(61)), true},   // 3 + 61 containers open
                                                 {event_with(nested(62)), false},  // one more than the one pass takes
                                                 {event_with("tru"), false},
                                                 {event_with("[1 2]"), false},
                                                 {event_with("01"), false},
                                                 {event_with(R"("\x")"), false},
                                                 {event_with(R"("a\u0001b")"), true}}) {
    SCOPED_TRACE(text);
    expect_parts_read_or_refuse_as_one_pass(dir, text, readable);
  }
}

// A plain file's parts are read and cut each on its own: where no place to cut lies in the part
// before a part's start (an event longer than a part), the part before reads on over it. Any
// part size and any number of threads read what one pass reads.
TEST(TraceParts, APlainFileReadsAlikeWhateverItsPartsAndThreads) {
  const auto dir = fresh_dir("trace_parts_plain");
  std::string text = "{\"traceEvents\": [\n";
  for (int i = 0; i < 400; ++i) {
    const std::size_t blob = i % 37 == 0 ? 9000 : static_cast<std::size_t>(i * 7 % 300);
    text += (i ? ",\n" : "") + std::string(R"({"ph": "X", "cat": "cpu_op", "name": "op)") + std::to_string(i % 13) +
            R"(", "pid": 1, "tid": )" + std::to_string(i % 3) + R"(, "ts": )" + std::to_string(1000 - i) +
            R"(, "dur": 1, "args": {"blob": ")" + std::string(blob, 'x') + "\"}}";
  }
  text += "\n], \"distributedInfo\": {\"rank\": 1, \"world_size\": 2}}\n";
  const fs::path path = write(dir / "plain.json", text);
  TraceFile one_pass = read_trace_text(text, path.string());
  for (const std::size_t part_bytes : {std::size_t{700}, std::size_t{4096}, std::size_t{50000}}) {
    for (const std::size_t threads : {std::size_t{1}, std::size_t{3}}) {
      SCOPED_TRACE(::testing::Message() << part_bytes << " bytes, " << threads << " threads");
      std::optional<TraceFile> parts = read_trace_in_parts(path.string(), part_bytes, {}, threads);
      ASSERT_TRUE(parts.has_value());
      expect_same(*parts, one_pass);
    }
  }
}

// Keys and strings are read where they stand in the text; one that holds an escape is decoded
// (and checked) as the one pass decodes it, a key that decodes to one the analysis reads included.
TEST(TraceParts, KeysAndStringsWithEscapesAreDecodedAsInOnePass) {
  const auto dir = fresh_dir("trace_parts_escapes");
  const auto events = [](const std::string& event) { return R"({"traceEvents": [)" + event + "]}"; };
  for (const auto& [text, readable] : std::vector<std::pair<std::string, bool>>{
           {events(R"({"ph": "X", "na\u006de": "op", "pid": 1, "tid": 1, "ts": 1, "dur": 1})"), true},
           {events(R"({"ph": "X", "name": "a\"b\\c\u00e9", "pid": "p\/1", "tid": 1, "ts": 1, "dur": 1})"), true},
           {events(R"({"ph"  :  "X" , "name" :"op"	,"pid":1,"tid":1,"ts":1,"dur":1 , "cat" : "cpu_op" })"), true},
           {events(R"({"ph": "X", "name": "op", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "z\q": 1})"), false},
           {events(R"({"ph": "X", "name": "op\q", "pid": 1, "tid": 1, "ts": 1, "dur": 1})"), false},
           // A correlation id no int64 holds: none.
           {events(R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 1, "tid": 1, "ts": 1, "dur": 1,)"
                   R"( "args": {"correlation": -1e300}})"),
            true},
           // A string read in place and then a colon, in the events or in a value no one reads.
           {events(R"({"ph": "X", "name": "op", "pid": 1, "tid": 1, "ts": 1, "dur": 1}, "ts": 1)"), false},
           {events(R"({"ph": "X", "name": "op", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "zz": ["a": 1]})"), false}}) {
    SCOPED_TRACE(text);
    expect_parts_read_or_refuse_as_one_pass(dir, text, readable);
  }
}

}  // namespace
}  // namespace ddp
