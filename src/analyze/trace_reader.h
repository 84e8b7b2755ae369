#pragma once
// Reads one trace file (.json or .json.gz) in one streaming pass, or a large one in parts on
// every core (trace_parts.h): Kineto's JSON object (torch.profiler, any version), the bare
// array that PyTorch builds without Kineto write, and ddpscope's own trace.json. Throws
// DataError naming the file and what is wrong.
#include <functional>
#include <string>

#include "analyze/trace_file.h"

namespace ddp {

TraceFile read_trace(const std::string& path, const std::function<void(double)>& progress = {});

// The same from text in memory (tests, the fuzz target); `path` names it in errors.
TraceFile read_trace_text(std::string_view text, const std::string& path);

}  // namespace ddp
