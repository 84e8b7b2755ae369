#include "observe/trace_writer.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "observe/phase.h"

namespace ddp {
namespace {

RankTrace sample_rank(int rank, int64_t offset) {
  RankTrace t;
  t.rank = rank;
  t.host = "node" + std::to_string(rank);
  t.clock_offset_ns = offset;
  t.spans = {{1000, 5000, static_cast<uint16_t>(Phase::kForward), TraceThread::kCompute},
             {5000, 9000, static_cast<uint16_t>(Phase::kBackward), TraceThread::kCompute},
             {6000, 11000, kAllreduceSpan, TraceThread::kComm, 4096, 3000}};
  t.utilization = {{2000, 87.5}};
  t.dropped = rank;
  return t;
}

TEST(TraceWriter, RankPartsSurviveTheTripThroughBytes) {
  const RankTrace t = sample_rank(3, -42);
  const RankTrace back = deserialize_rank_trace(serialize_rank_trace(t));
  EXPECT_EQ(back.rank, 3);
  EXPECT_EQ(back.host, "node3");
  EXPECT_EQ(back.clock_offset_ns, -42);
  ASSERT_EQ(back.spans.size(), 3u);
  EXPECT_EQ(back.spans[2].bytes, 4096);
  EXPECT_EQ(back.spans[2].hidden_ns, 3000);
  ASSERT_EQ(back.utilization.size(), 1u);
  EXPECT_EQ(back.utilization[0].percent, 87.5);
  EXPECT_EQ(back.dropped, 3u);
}

// A long run's trace reaches the file in pieces of about a megabyte, never whole in memory,
// and the pieces make the same JSON.
TEST(TraceWriter, ALargeTraceIsWrittenInPiecesThatJoinIntoValidJson) {
  RankTrace big = sample_rank(0, 0);
  big.host = "quote\" and \xff byte";  // escaped, and invalid UTF-8 replaced
  for (int i = 0; i < 100000; ++i) big.spans.push_back(big.spans[i % 3]);
  std::vector<std::size_t> pieces;
  std::string joined;
  write_chrome_trace({big}, 0, [&](std::string_view piece) {
    pieces.push_back(piece.size());
    joined += piece;
  });
  EXPECT_GT(pieces.size(), 3u);
  for (std::size_t size : pieces) EXPECT_LT(size, (std::size_t{1} << 20) + 1024);
  EXPECT_EQ(joined, chrome_trace_json({big}, 0));
  const auto trace = nlohmann::json::parse(joined);
  EXPECT_EQ(trace["traceEvents"].size(), 2 + 4 + big.spans.size() + 1);  // names, threads, spans, a counter
  EXPECT_EQ(trace["traceEvents"][0]["args"]["name"], "rank 0 (quote\" and \xef\xbf\xbd byte)");
}

TEST(TraceWriter, ChromeTraceHasNamedRanksThreadsSpansAndCounters) {
  const auto trace = nlohmann::json::parse(chrome_trace_json({sample_rank(0, 0), sample_rank(1, 500)}, 1000));
  EXPECT_EQ(trace["displayTimeUnit"], "ms");
  std::map<int, std::string> processes;
  std::map<std::pair<int, int>, std::string> threads;
  int complete = 0, counters = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") processes[e["pid"]] = e["args"]["name"];
    if (e["ph"] == "M" && e["name"] == "thread_name") threads[{e["pid"], e["tid"]}] = e["args"]["name"];
    if (e["ph"] == "X") {
      ++complete;
      if (e["pid"] == 1 && e["name"] == "forward") {
        EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 0.5);  // (1000 + 500 - 1000) ns, in microseconds
        EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 4.0);
        EXPECT_EQ(e["tid"], 0);
      }
      if (e["name"] == "allreduce") {
        EXPECT_EQ(e["tid"], 1);
        EXPECT_EQ(e["cat"], "comm");
        EXPECT_EQ(e["args"]["bytes"], 4096);
        EXPECT_DOUBLE_EQ(e["args"]["hidden_behind_backward_us"].get<double>(), 3.0);
      }
    }
    if (e["ph"] == "C") {
      ++counters;
      EXPECT_EQ(e["name"], "device_" + std::to_string(e["pid"].get<int>()) + "_utilization");
      EXPECT_EQ(e["args"]["percent"], 87.5);
    }
  }
  EXPECT_EQ(processes, (std::map<int, std::string>{{0, "rank 0 (node0)"}, {1, "rank 1 (node1)"}}));
  for (int pid : {0, 1}) {
    EXPECT_EQ(threads[std::make_pair(pid, 0)], "compute");
    EXPECT_EQ(threads[std::make_pair(pid, 1)], "comm");
    EXPECT_EQ(threads[std::make_pair(pid, 2)], "loader");
    EXPECT_EQ(threads[std::make_pair(pid, 3)], "monitor");
  }
  EXPECT_EQ(complete, 6);
  EXPECT_EQ(counters, 2);
}

TEST(TraceWriter, AGpuTrackIsNamedOnlyForARankWithGpuSpans) {
  RankTrace gpu = sample_rank(0, 0);
  gpu.spans.push_back({2000, 3000, static_cast<uint16_t>(Phase::kForward), TraceThread::kGpu});
  const auto trace = nlohmann::json::parse(chrome_trace_json({gpu, sample_rank(1, 0)}, 0));
  std::map<int, std::vector<std::string>> names;  // per pid, its tid 4's name and spans' categories
  for (const auto& e : trace["traceEvents"]) {
    if (e.value("tid", -1) != 4) continue;
    names[e["pid"]].push_back(e["ph"] == "M" ? e["args"]["name"].get<std::string>() : e["cat"].get<std::string>());
  }
  EXPECT_EQ(names[0], (std::vector<std::string>{"gpu", "gpu"}));  // the track's name, then its span's category
  EXPECT_TRUE(names[1].empty());
}

}  // namespace
}  // namespace ddp
