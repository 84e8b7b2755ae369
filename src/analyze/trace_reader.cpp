#include "analyze/trace_reader.h"

#include <fmt/format.h>
#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <cmath>
#include <string_view>

#include "analyze/trace_stream.h"
#include "ddpscope/error.h"

namespace ddp {
namespace {

EventKind kind_of(std::string_view category) {
  if (category == "kernel") return EventKind::kGpuKernel;
  if (category == "gpu_memcpy" || category == "gpu_memset") return EventKind::kGpuMemory;
  if (category == "gpu_user_annotation") return EventKind::kGpuAnnotation;
  if (category == "cuda_runtime" || category == "cuda_driver") return EventKind::kRuntime;
  if (category.empty() || category == "cpu_op" || category == "Operator" || category == "user_annotation" ||
      category == "python_function" || category == "phase" || category == "comm") {
    return EventKind::kHostOp;
  }
  return EventKind::kOther;
}

// Bytes per element of a collective's dtype, as Kineto ("Float") or the legacy input types
// ("float") spell it; 0 when unknown.
int64_t element_bytes(std::string_view dtype) {
  std::string lower(dtype);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "float" || lower == "int" || lower == "float32" || lower == "int32") return 4;
  if (lower == "half" || lower == "bfloat16" || lower == "c10::half" || lower == "c10::bfloat16" || lower == "short" ||
      lower == "float16") {
    return 2;
  }
  if (lower == "double" || lower == "long" || lower == "long int" || lower == "int64" || lower == "float64") return 8;
  if (lower == "byte" || lower == "char" || lower == "bool" || lower == "unsigned char" || lower == "signed char") {
    return 1;
  }
  return 0;
}

// The SAX handler: a stack of where the parser is, keeping only what TraceEvent holds.
class TraceHandler : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, TraceHandler> {
 public:
  explicit TraceHandler(TraceFile& out) : out_(out) {}

  bool Null() { return scalar(Value{}); }
  bool Bool(bool) { return scalar(Value{}); }
  bool Int(int v) { return scalar(Value::of_number(v)); }
  bool Uint(unsigned v) { return scalar(Value::of_number(v)); }
  bool Int64(int64_t v) { return scalar(Value::of_number(static_cast<double>(v))); }
  bool Uint64(uint64_t v) { return scalar(Value::of_number(static_cast<double>(v))); }
  bool Double(double v) { return scalar(Value::of_number(v)); }
  bool String(const char* s, rapidjson::SizeType n, bool) { return scalar(Value::of_text({s, n})); }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    key_.assign(s, n);
    return true;
  }
  bool StartObject() { return open(true); }
  bool EndObject(rapidjson::SizeType) { return close(); }
  bool StartArray() { return open(false); }
  bool EndArray(rapidjson::SizeType) { return close(); }

  bool saw_events() const { return saw_events_; }

 private:
  enum class Where { kRoot, kTop, kEvents, kEvent, kArgs, kDims, kDimsInner, kTypes, kDistributed, kOtherData, kSkip };

  struct Value {
    bool is_number = false;
    bool is_text = false;
    double number = 0;
    std::string_view text;
    static Value of_number(double v) { return {true, false, v, {}}; }
    static Value of_text(std::string_view t) { return {false, true, 0, t}; }
    // pid and tid are numbers in Kineto and may be text in the legacy format.
    std::string as_text() const { return is_text ? std::string(text) : fmt::format("{}", number); }
  };

  // The event being read.
  struct Scratch {
    std::string name, category, phase, pid, tid, collective_dtype, input_type;
    double ts = NAN, dur = NAN;
    double nelems = -1, bytes = -1, dims_product = -1;
    std::string process_group;
    int64_t correlation = -1;
    bool first_dims_done = false;
  };

  Where where() const { return stack_.empty() ? Where::kRoot : stack_.back(); }

  bool open(bool object) {
    const Where at = where();
    Where next = Where::kSkip;
    switch (at) {
      case Where::kRoot:
        if (object) {
          next = Where::kTop;
        } else {
          next = Where::kEvents;
          out_.dialect = TraceFile::Dialect::kLegacyArray;
          saw_events_ = true;
        }
        break;
      case Where::kTop:
        if (!object && key_ == "traceEvents") {
          next = Where::kEvents;
          saw_events_ = true;
        } else if (object && key_ == "distributedInfo") {
          next = Where::kDistributed;
        } else if (object && key_ == "otherData") {
          next = Where::kOtherData;
        }
        break;
      case Where::kEvents:
        if (object) {
          next = Where::kEvent;
          event_ = Scratch{};
        }
        break;
      case Where::kEvent:
        if (object && key_ == "args") next = Where::kArgs;
        break;
      case Where::kArgs:
        if (!object && key_ == "Input Dims") next = Where::kDims;
        if (!object && key_ == "Input type") next = Where::kTypes;
        break;
      case Where::kDims:
        if (!object && !event_.first_dims_done) {
          next = Where::kDimsInner;
          event_.dims_product = 1;
        }
        break;
      default:
        break;
    }
    stack_.push_back(next);
    return true;
  }

  bool close() {
    const Where closing = where();
    stack_.pop_back();
    if (closing == Where::kEvent) keep_event();
    if (closing == Where::kDimsInner) event_.first_dims_done = true;
    return true;
  }

  bool scalar(const Value& v) {
    switch (where()) {
      case Where::kRoot:
        return false;  // a bare number or string is no trace
      case Where::kEvent:
        event_field(v);
        break;
      case Where::kArgs:
        arg_field(v);
        break;
      case Where::kDimsInner:
        if (v.is_number) event_.dims_product *= v.number;
        break;
      case Where::kTypes:
        if (v.is_text && event_.input_type.empty()) event_.input_type = std::string(v.text);
        break;
      case Where::kDistributed:
        distributed_field(v);
        break;
      case Where::kOtherData:
        if (key_ == "producer" && v.is_text && v.text.starts_with("ddpscope")) {
          out_.dialect = TraceFile::Dialect::kDdpscope;
        }
        break;
      default:
        break;
    }
    return true;
  }

  void event_field(const Value& v) {
    if (key_ == "name" && v.is_text)
      event_.name = std::string(v.text);
    else if (key_ == "cat" && v.is_text)
      event_.category = std::string(v.text);
    else if (key_ == "ph" && v.is_text)
      event_.phase = std::string(v.text);
    else if (key_ == "ts" && v.is_number)
      event_.ts = v.number;
    else if (key_ == "dur" && v.is_number)
      event_.dur = v.number;
    else if (key_ == "pid" && (v.is_number || v.is_text))
      event_.pid = v.as_text();
    else if (key_ == "tid" && (v.is_number || v.is_text))
      event_.tid = v.as_text();
  }

  void arg_field(const Value& v) {
    if (key_ == "In msg nelems" && v.is_number)
      event_.nelems = v.number;
    else if (key_ == "dtype" && v.is_text)
      event_.collective_dtype = std::string(v.text);
    else if ((key_ == "Process Group Name" || key_ == "Process Group ID") && (v.is_text || v.is_number)) {
      event_.process_group = v.as_text();
    } else if (key_ == "correlation" && v.is_number) {
      event_.correlation = static_cast<int64_t>(v.number);
    } else if (key_ == "bytes" && v.is_number) {
      event_.bytes = v.number;
    }
  }

  void distributed_field(const Value& v) {
    const bool whole = v.is_number && v.number >= 0 && v.number < 1e9 && v.number == std::floor(v.number);
    if (key_ == "rank" && whole) out_.distributed.rank = static_cast<int>(v.number);
    if (key_ == "world_size" && whole) out_.distributed.world_size = static_cast<int>(v.number);
    if (key_ == "backend" && v.is_text) out_.distributed.backend = std::string(v.text);
  }

  void keep_event() {
    const Scratch& e = event_;
    if (e.phase != "X" || e.name.empty() || !std::isfinite(e.ts) || !std::isfinite(e.dur) || e.dur < 0) return;
    const EventKind kind = kind_of(e.category);
    if (kind == EventKind::kOther) return;
    // Microseconds (Chrome's trace format) to integer nanoseconds; a start plus a duration must fit
    // int64 (beyond 126 years is no time).
    if (std::fabs(e.ts) > 4e15 || e.dur > 4e15) return;
    TraceEvent t;
    t.start_ns = std::llround(e.ts * 1e3);
    t.duration_ns = std::llround(e.dur * 1e3);
    t.name = out_.names.intern(e.name);
    const std::size_t threads = out_.threads.size();
    t.thread = out_.threads.intern(e.pid + "/" + e.tid);
    if (out_.threads.size() > threads) out_.thread_pid.push_back(pid_number(e.pid));
    t.kind = kind;
    double bytes = e.bytes;
    if (bytes < 0 && e.nelems >= 0) bytes = e.nelems * static_cast<double>(element_bytes(e.collective_dtype));
    if (bytes < 0 && e.dims_product >= 0 && !e.input_type.empty()) {
      bytes = e.dims_product * static_cast<double>(element_bytes(e.input_type));
    }
    t.bytes = bytes > 0 && bytes < 9e18 ? static_cast<int64_t>(bytes) : -1;
    if (!e.process_group.empty()) t.process_group = out_.names.intern(e.process_group);
    t.correlation = e.correlation;
    out_.events.push_back(t);
  }

  static int64_t pid_number(const std::string& pid) {
    if (pid.empty() || pid.size() > 18) return -1;
    for (char c : pid) {
      if (c < '0' || c > '9') return -1;
    }
    return std::stoll(pid);
  }

  TraceFile& out_;
  std::vector<Where> stack_;
  std::string key_;
  Scratch event_;
  bool saw_events_ = false;
};

template <typename Stream>
TraceFile parse(Stream& stream, const std::string& path) {
  TraceFile out;
  out.path = path;
  TraceHandler handler(out);
  rapidjson::Reader reader;
  // Iterative: a deeply nested file cannot exhaust the stack.
  const rapidjson::ParseResult result = reader.Parse<rapidjson::kParseIterativeFlag>(stream, handler);
  if (result.IsError()) {
    if (result.Code() == rapidjson::kParseErrorTermination) {
      throw DataError(fmt::format("{}: not a trace: its top level is a single value, not an object or array", path));
    }
    throw DataError(fmt::format("{}: not valid JSON at byte {}: {}", path, result.Offset(),
                                rapidjson::GetParseError_En(result.Code())));
  }
  if (!handler.saw_events()) {
    throw DataError(
        fmt::format("{}: not a trace: a JSON object without \"traceEvents\" (Kineto's and Chrome's "
                    "trace format), and not an array of events",
                    path));
  }
  return out;
}

}  // namespace

TraceFile read_trace(const std::string& path, const std::function<void(double)>& progress) {
  TraceStream stream(path, progress);
  return parse(stream, path);
}

TraceFile read_trace_text(std::string_view text, const std::string& path) {
  rapidjson::MemoryStream stream(text.data(), text.size());
  return parse(stream, path);
}

}  // namespace ddp
