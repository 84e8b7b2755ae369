#pragma once
// One part of a large trace file (trace_parts.h), parsed by simdjson's On-Demand API: it walks
// the text once and reads only the fields the analysis uses, where a SAX parser hands every
// value over. A parser holds buffers sized to the largest part it has read: keep one per
// thread and reuse it.
#include <simdjson.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/trace_file.h"

namespace ddp {

// A part as read: its file's tables (names, threads, what it says of the job) and its events
// in the order they stand in the text; `file.events` stays empty.
struct ParsedPart {
  TraceFile file;
  std::vector<TraceEvent> events;
};

class PartParser {
 public:
  // The bytes a part's text must have after its end (simdjson reads whole SIMD blocks).
  static constexpr std::size_t kPadding = simdjson::SIMDJSON_PADDING;

  // The longest part it reads (part_sources.cpp cuts parts far shorter).
  static constexpr std::size_t kMostPartBytes = std::size_t{64} << 20;

  PartParser();

  // `padded` holds the part's `length` bytes and at least kPadding more. nullopt where it is not
  // valid JSON (values the analysis does not use are checked, not kept), nests deeper than
  // kMaxJsonDepth, or, when `cut_after` (it ends with the closing null of trace_parts.h), was
  // not cut between two events: the one pass then says what is wrong.
  std::optional<ParsedPart> parse(std::string_view padded, std::size_t length, bool cut_after);

 private:
  simdjson::ondemand::parser parser_;
};

}  // namespace ddp
