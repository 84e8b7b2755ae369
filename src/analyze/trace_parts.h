#pragma once
// A large trace file read in parts on every core: the text is cut where one event of the events
// array ends and the next begins (part_sources.h), each part is made whole JSON by what stands
// around it in the file (`{"traceEvents":[` before it, `null]}` after it) and parsed in place
// by the thread that read it, and the parts' events join in the file's order. The closing null
// proves that a part was cut between two events (it must land in the events array); where it
// does not (a cut inside an event's arguments or a string), or a part is not valid JSON, or no
// place to cut is found, the file is read again in one pass, which says what is wrong.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>

#include "analyze/trace_file.h"

namespace ddp {

// The whole file in parts of about `part_bytes`, `threads` parsing at once (0: one per core, at
// most 8); nullopt where it cannot be read so (then read it in one pass). Throws DataError where
// the file cannot be read or its gzip is damaged.
std::optional<TraceFile> read_trace_in_parts(const std::string& path, std::size_t part_bytes,
                                             const std::function<void(double)>& progress = {}, std::size_t threads = 0);

}  // namespace ddp
