// The trace reader on each dialect, on gzip, and on files that are no trace.
#include "analyze/trace_reader.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "ddpscope/error.h"
#include "observe/phase.h"
#include "observe/trace_writer.h"
#include "support/run_command.h"

namespace ddp {
namespace {

using ::ddp::testing::fresh_dir;

constexpr const char* kKineto = R"json({
  "schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "x"}],
  "distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 2, "pg_config": [{"ranks": [0, 1]}]},
  "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 7, "tid": 7, "ts": 1000.5, "dur": 250.25},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
     "pid": 0, "tid": 40, "ts": 1100, "dur": 20,
     "args": {"correlation": 9, "Collective name": "allreduce", "In msg nelems": 1024, "dtype": "Float",
              "Process Group Name": "0", "Process Group Ranks": "[0, 1]"}},
    {"ph": "f", "cat": "ac2g", "name": "flow", "pid": 0, "tid": 40, "ts": 1100, "id": 9},
    {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 0, "dur": 9}
  ],
  "baseTimeNanoseconds": 1711964646000000000
})json";

std::filesystem::path write(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

std::filesystem::path write_gzip(const std::filesystem::path& path, const std::string& text) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, text.data(), static_cast<unsigned>(text.size()));
  gzclose(f);
  return path;
}

std::string error_of(const std::string& path) {
  try {
    read_trace(path);
  } catch (const DataError& e) {
    return e.what();
  }
  return "no error";
}

TEST(TraceReader, KeepsKinetosCompleteEventsInNanosecondsWithTheirCollectiveMetadata) {
  TraceFile t = read_trace_text(kKineto, "k.json");
  EXPECT_EQ(t.dialect, TraceFile::Dialect::kKineto);
  EXPECT_EQ(t.distributed.rank, 1);
  EXPECT_EQ(t.distributed.world_size, 2);
  EXPECT_EQ(t.distributed.backend, "nccl");
  const std::vector<TraceEvent> events = t.events.sorted();
  ASSERT_EQ(events.size(), 2u);  // the flow and the "Trace" span are not kept
  EXPECT_EQ(t.names[events[0].name], "ProfilerStep#4");
  EXPECT_EQ(events[0].start_ns, 1000500);
  EXPECT_EQ(events[0].duration_ns, 250250);
  EXPECT_EQ(events[0].kind, EventKind::kHostOp);
  ASSERT_EQ(t.step_markers.size(), 1u);  // the step marker, known before the events are read in order
  EXPECT_EQ(t.gpu_kernels, 1);
  EXPECT_EQ(t.collective_kernels, 1);
  const TraceEvent& kernel = events[1];
  EXPECT_EQ(kernel.kind, EventKind::kGpuKernel);
  EXPECT_EQ(kernel.bytes, 4096);  // 1024 floats
  EXPECT_EQ(t.names[kernel.process_group], "0");
  EXPECT_EQ(kernel.correlation, 9);
  EXPECT_EQ(t.threads[kernel.thread], "0/40");
}

TEST(TraceReader, ReadsTheLegacyArrayAndGlooSizesFromTheInputDims) {
  TraceFile t = read_trace_text(
      R"([{"name": "gloo:all_reduce", "ph": "X", "ts": 5, "dur": 3, "tid": 2, "pid": "CPU functions",
           "args": {"Input Dims": [[100, 3], [7]], "Input type": ["float", "long"]}},
          {"name": "aten::mm", "ph": "X", "ts": 1, "dur": 1, "tid": 1, "pid": "CPU functions", "args": {}}])",
      "legacy.json");
  EXPECT_EQ(t.dialect, TraceFile::Dialect::kLegacyArray);
  EXPECT_FALSE(t.distributed.rank.has_value());
  const std::vector<TraceEvent> events = t.events.sorted();  // in start order: aten::mm first
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].bytes, 1200);  // the first input: 100 x 3 floats
  EXPECT_EQ(events[0].bytes, -1);
  EXPECT_EQ(t.thread_pid[events[1].thread], -1);  // "CPU functions" is no process id
}

TEST(TraceReader, KnowsDdpscopesOwnTraceByItsProducer) {
  RankTrace rank;
  rank.rank = 1;
  rank.spans.push_back(Span{0, 1000, static_cast<uint16_t>(Phase::kForward), TraceThread::kCompute, 0, 0});
  TraceFile t = read_trace_text(chrome_trace_json({rank}, 0), "trace.json");
  EXPECT_EQ(t.dialect, TraceFile::Dialect::kDdpscope);
  const std::vector<TraceEvent> events = t.events.sorted();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(t.names[events[0].name], "forward");
  EXPECT_EQ(t.thread_pid[events[0].thread], 1);
}

TEST(TraceReader, InflatesGzipAsItReadsAndReadsPlainFilesAlike) {
  const auto dir = fresh_dir("trace_reader_gzip");
  TraceFile plain = read_trace(write(dir / "a.json", kKineto).string());
  TraceFile packed = read_trace(write_gzip(dir / "a.json.gz", kKineto).string());
  const std::vector<TraceEvent> a = plain.events.sorted(), b = packed.events.sorted();
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(a[1].start_ns, b[1].start_ns);
}

// gzip as gzip and zlib write it: members one after another (a file appended to, pigz's blocks)
// are one text, and what follows the last member and is no gzip is ignored, as gunzip does.
TEST(TraceReader, ReadsGzipMembersOneAfterAnotherAndIgnoresWhatFollowsThem) {
  const auto dir = fresh_dir("trace_reader_members");
  const std::string text = kKineto;
  const std::size_t half = text.size() / 2;
  const std::string first = ::ddp::testing::read_text(write_gzip(dir / "1.gz", text.substr(0, half)));
  const std::string second = ::ddp::testing::read_text(write_gzip(dir / "2.gz", text.substr(half)));
  const TraceFile one = read_trace(write_gzip(dir / "one.json.gz", text).string());
  const TraceFile members = read_trace(write(dir / "members.json.gz", first + second).string());
  EXPECT_EQ(members.events.size(), one.events.size());
  EXPECT_EQ(members.distributed.rank, 1);
  const TraceFile trailing = read_trace(write(dir / "trailing.json.gz", first + second + "not gzip").string());
  EXPECT_EQ(trailing.events.size(), one.events.size());
  // A member cut short is damage, whatever follows.
  EXPECT_THROW(read_trace(write(dir / "cut.json.gz", first + second.substr(0, second.size() - 6)).string()), DataError);
}

TEST(TraceReader, NamesTheFileAndWhatIsWrongWithIt) {
  const auto dir = fresh_dir("trace_reader_bad");
  std::string packed;
  {
    write_gzip(dir / "whole.json.gz", std::string(kKineto) + std::string(100000, ' '));
    std::ifstream in(dir / "whole.json.gz", std::ios::binary);
    packed.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string cut = write(dir / "cut.json.gz", packed.substr(0, packed.size() / 2)).string();
  EXPECT_EQ(error_of(cut), cut + ": damaged or truncated (gzip: unexpected end of file)");
  const std::string empty = write(dir / "empty.json", "").string();
  EXPECT_EQ(error_of(empty), empty + ": not valid JSON at byte 0: The document is empty.");
  const std::string half = write(dir / "half.json", std::string(kKineto).substr(0, 300)).string();
  EXPECT_EQ(error_of(half).substr(0, half.size() + 18), half + ": not valid JSON a");
  const std::string number = write(dir / "number.json", "42").string();
  EXPECT_EQ(error_of(number), number + ": not a trace: its top level is a single value, not an object or array");
  const std::string object = write(dir / "object.json", R"({"traceEvent": []})").string();
  EXPECT_EQ(error_of(object), object +
                                  ": not a trace: a JSON object without \"traceEvents\" (Kineto's and Chrome's "
                                  "trace format), and not an array of events");
  EXPECT_EQ(error_of((dir / "missing.json").string()),
            (dir / "missing.json").string() + ": cannot read it: No such file or directory");
  EXPECT_EQ(error_of(dir.string()), dir.string() + ": not a regular file or a pipe");
}

TEST(TraceReader, NestingBeyondTheLimitIsRefusedAndWithinItRead) {
  const std::string deep = "[" + std::string(200000, '[') + std::string(200000, ']') + "]";
  try {
    read_trace_text(deep, "deep.json");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()),
              "deep.json: nested more than 64 levels deep at byte 64, which no profiler writes: not a trace");
  }
  const std::string within = "[" + std::string(62, '[') + std::string(62, ']') + "]";
  EXPECT_TRUE(read_trace_text(within, "within.json").events.empty());
}

// A bit flipped inside a gzip member can inflate to text that fails to parse before the member's
// check sum is read: the damage is what is said, not the JSON it garbled.
TEST(TraceReader, AFlippedBitInsideAGzipIsDamageNotInvalidJson) {
  const auto dir = fresh_dir("trace_reader_flip");
  // Longer inflated than one read of the stream (256 KiB), so that the text read first is parsed
  // before the member's end, where its check sum is.
  std::string text = kKineto;
  text.insert(text.size() - 50, std::string(1 << 20, ' '));
  write_gzip(dir / "a.json.gz", text);
  std::string packed;
  {
    std::ifstream in(dir / "a.json.gz", std::ios::binary);
    packed.assign(std::istreambuf_iterator<char>(in), {});
  }
  int damaged = 0, refused = 0;
  for (std::size_t byte = 20; byte < 400; byte += 3) {  // within the deflate stream's events
    std::string flipped = packed;
    flipped[byte] = static_cast<char>(flipped[byte] ^ 0x10);
    const std::string path = write(dir / "flipped.json.gz", flipped).string();
    const std::string error = error_of(path);
    EXPECT_EQ(error.find("not valid JSON"), std::string::npos) << "byte " << byte << ": " << error;
    damaged += error.find("damaged or truncated (gzip") != std::string::npos ? 1 : 0;
    refused += error != "no error" ? 1 : 0;
  }
  EXPECT_EQ(damaged, refused);
  EXPECT_GT(damaged, 0);
}

TEST(TraceReader, ReadsAByteOrderMarkAPipeAndKinetosHostAndClock) {
  const auto dir = fresh_dir("trace_reader_bom");
  const TraceFile marked = read_trace(write(dir / "bom.json", "\xEF\xBB\xBF" + std::string(kKineto)).string());
  EXPECT_EQ(marked.events.size(), 2u);
  EXPECT_EQ(marked.base_time_ns, 1711964646000000000.0);
  const std::string pipe = (dir / "pipe").string();
  ASSERT_EQ(::mkfifo(pipe.c_str(), 0600), 0);
  const pid_t writer = ::fork();
  if (writer == 0) {
    std::ofstream(pipe) << kKineto;
    ::_exit(0);
  }
  const TraceFile piped = read_trace(pipe);
  ::waitpid(writer, nullptr, 0);
  EXPECT_EQ(piped.events.size(), 2u);
  const TraceFile hosted = read_trace_text(R"({"host_name": "node7", "traceEvents": []})", "h.json");
  EXPECT_EQ(hosted.host_name, "node7");
}

TEST(TraceReader, KnowsAnalyzesOwnMergedTraceFromATrainRunsTrace) {
  EXPECT_EQ(
      read_trace_text(R"({"otherData": {"producer": "ddpscope 0.1.0 analyze"}, "traceEvents": []})", "m.json").dialect,
      TraceFile::Dialect::kAnalyzeOutput);
  EXPECT_EQ(read_trace_text(R"({"otherData": {"producer": "ddpscope 0.1.0"}, "traceEvents": []})", "t.json").dialect,
            TraceFile::Dialect::kDdpscope);
}

}  // namespace
}  // namespace ddp
