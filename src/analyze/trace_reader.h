#pragma once
// Reads one trace file (.json or .json.gz) in one streaming pass, or a large one in parts on
// every core (trace_parts.h): Kineto's JSON object (torch.profiler, any version), the bare
// array that PyTorch builds without Kineto write, and ddpscope's own trace.json. Throws
// DataError naming the file and what is wrong.
#include <cstddef>
#include <functional>
#include <string>

#include "analyze/trace_file.h"

namespace ddp {

// Limits on one file: a profiler writes far below them, and hostile input meets them as a
// DataError, never as the machine's memory running out.
inline constexpr std::size_t kMaxJsonDepth = 64;  // Kineto nests 5 deep
// The parser's buffer for one string: a string longer than 10 MiB passes it on its way.
inline constexpr std::size_t kStringBufferBytes = std::size_t{16} << 20;

// `threads`: how many may parse a large file's parts at once (0: one per core).
TraceFile read_trace(const std::string& path, const std::function<void(double)>& progress = {},
                     std::size_t threads = 0);

// The same from text in memory (tests, the fuzz target); `path` names it in errors.
TraceFile read_trace_text(std::string_view text, const std::string& path);

}  // namespace ddp
