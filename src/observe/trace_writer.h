#pragma once
// trace.json in Chrome's trace-event format (loads in Perfetto and chrome://tracing): one
// pid per rank, one tid per thread (compute, comm, loader, monitor), every span as a
// complete event, and device utilization as counter tracks.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "observe/span_buffer.h"

namespace ddp {

struct UtilizationPoint {
  int64_t time_ns = 0;  // steady clock
  double percent = 0;
};

struct RankTrace {
  int rank = 0;
  std::string host;
  int64_t clock_offset_ns = 0;  // add to this rank's times to get rank zero's clock
  std::vector<Span> spans;
  std::size_t dropped = 0;
  std::vector<UtilizationPoint> utilization;
};

// origin_ns (rank zero's clock) becomes time 0 of the trace. The JSON goes to the sink in
// pieces of about a megabyte.
void write_chrome_trace(const std::vector<RankTrace>& ranks, int64_t origin_ns,
                        const std::function<void(std::string_view)>& sink);
// The same, whole.
std::string chrome_trace_json(const std::vector<RankTrace>& ranks, int64_t origin_ns);

// A rank's part as bytes and back, to gather it at rank zero.
std::vector<std::byte> serialize_rank_trace(const RankTrace& trace);
RankTrace deserialize_rank_trace(const std::vector<std::byte>& bytes);

}  // namespace ddp
