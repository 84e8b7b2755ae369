// The trace reader and a rank's step split on arbitrary bytes: the first byte picks memory or a
// file (the file path inflates gzip), and whether the file is also read in parts of 64 bytes,
// which must give what one pass gives or nothing. Refusing is a DataError; whatever is accepted
// has steps whose parts are not negative and add up to the step.
#include <cstdint>
#include <numeric>
#include <optional>
#include <string_view>

#include "analyze/rank_steps.h"
#include "analyze/trace_parts.h"
#include "analyze/trace_reader.h"
#include "base/check.h"
#include "ddpscope/error.h"
#include "fuzz_input_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool through_file = (data[0] & 1) != 0;
  if ((data[0] & 2) != 0) {
    const std::string& path = ddp::fuzz::write_input("trace_fuzz", data + 1, size - 1);
    std::optional<ddp::TraceFile> parts;
    try {
      parts = ddp::read_trace_in_parts(path, 64);
    } catch (const ddp::Error&) {  // a damaged gzip, as one pass says it
    }
    if (parts) {
      ddp::TraceFile one_pass = ddp::read_trace(path);  // parts were read: one pass must read it too
      DDP_CHECK_EQ(parts->events.size(), one_pass.events.size());
      DDP_CHECK_EQ(parts->names.size(), one_pass.names.size());
      DDP_CHECK(parts->dialect == one_pass.dialect, "parts and one pass disagree on the dialect");
    }
  }
  try {
    ddp::TraceFile trace = through_file
                               ? ddp::read_trace(ddp::fuzz::write_input("trace_fuzz", data + 1, size - 1))
                               : ddp::read_trace_text({reinterpret_cast<const char*>(data + 1), size - 1}, "fuzz.json");
    const ddp::RankSteps steps = ddp::find_steps(trace);
    for (const ddp::TraceStep& s : steps.steps) {
      for (const int64_t ns : s.part_ns) DDP_CHECK(ns >= 0, "a negative part");
      DDP_CHECK_EQ(std::accumulate(s.part_ns.begin(), s.part_ns.end(), int64_t{0}), s.duration_ns);
    }
  } catch (const ddp::Error&) {
  }
  return 0;
}
