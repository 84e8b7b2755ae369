#pragma once
// One complete event ("ph":"X") of a trace file, in integer nanoseconds on the file's own clock,
// with its name and thread interned and the few arguments the later stages use. Clocks are
// never compared across files.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ddp {

// Where an event ran, from its "cat": on a host thread, or on a GPU stream.
enum class EventKind : uint8_t {
  kHostOp,         // cpu_op, Operator, user_annotation, python_function, legacy (no category)
  kGpuKernel,      // kernel
  kGpuMemory,      // gpu_memcpy, gpu_memset
  kGpuAnnotation,  // gpu_user_annotation: ProfilerStep#N as the GPU ran it
  kRuntime,        // cuda_runtime, cuda_driver: launches from the host
  kOther,          // anything else (Trace, flows are not kept)
};

struct TraceEvent {
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  // A collective's metadata where the trace has it (Kineto's kernel args, gloo's input dims).
  int64_t bytes = -1;          // -1: unknown
  int64_t correlation = -1;    // a launch and its kernel share it; -1: none
  uint32_t name = 0;           // TraceFile::names
  uint32_t thread = 0;         // TraceFile::threads
  uint32_t process_group = 0;  // TraceFile::names; 0 (the empty name): unknown
  EventKind kind = EventKind::kHostOp;
};

// Interned strings: index 0 is always the empty string.
class NameTable {
 public:
  NameTable() { intern(""); }
  uint32_t intern(std::string_view text);
  const std::string& operator[](uint32_t id) const { return texts_[id]; }
  std::size_t size() const { return texts_.size(); }

 private:
  // Looked up by string_view, without making a string.
  struct Hash {
    using is_transparent = void;  // NOLINT(readability-identifier-naming): the standard's name
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::vector<std::string> texts_;
  std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> ids_;
};

}  // namespace ddp
