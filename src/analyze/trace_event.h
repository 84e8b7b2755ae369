#pragma once
// What the trace reader keeps of one trace file: its complete events ("ph":"X"), each in
// integer nanoseconds on the file's own clock, with names and threads interned, and the few
// arguments the later stages use. Clocks are never compared across files.
#include <cstdint>
#include <deque>
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

// The job a file says it belongs to, where it says (Kineto's distributedInfo).
struct DistributedInfo {
  std::optional<int> rank;
  std::optional<int> world_size;
  std::string backend;  // "nccl", "gloo", ... or empty
};

// One rank's trace as read. `pid` keeps ddpscope's own trace.json apart: it holds every rank,
// one per process id.
struct TraceFile {
  std::string path;
  enum class Dialect { kKineto, kLegacyArray, kDdpscope } dialect = Dialect::kKineto;
  DistributedInfo distributed;
  NameTable names;
  NameTable threads;                    // "pid/tid" of a host thread or GPU stream
  std::deque<TraceEvent> events;        // grows without copying what it holds
  std::vector<int64_t> thread_pid{-1};  // per thread (index 0: the empty name): its process id, or -1
};

}  // namespace ddp
