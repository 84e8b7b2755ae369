#include "analyze/trace_reader.h"

// RapidJSON's SIMD scans of whitespace and strings, for text in memory (the parts).
#if defined(__SSE4_2__)
#define RAPIDJSON_SSE42
#elif defined(__SSE2__)
#define RAPIDJSON_SSE2
#endif

#include <fmt/format.h>
#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "analyze/trace_parts.h"
#include "analyze/trace_stream.h"
#include "ddpscope/error.h"

// RapidJSON's hook for a stream's whitespace (its name, its namespace).
namespace rapidjson {
template <>
inline void SkipWhitespace(ddp::TraceStream& is) {
  is.skip_whitespace();
}
}  // namespace rapidjson

namespace ddp {
namespace {

// A file this large is read in parts of kPartBytes, on every core (trace_parts.h); a gzip file's
// parts are of its inflated text.
constexpr std::uintmax_t kPartsFromBytes = std::uintmax_t{8} << 20;
constexpr std::size_t kPartBytes = std::size_t{4} << 20;

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

// The keys the reader uses; every other key is kNone and its value skipped.
enum class Field {
  kNone,
  kTraceEvents,
  kDistributedInfo,
  kOtherData,
  kProducer,
  kName,
  kCat,
  kPh,
  kTs,
  kDur,
  kPid,
  kTid,
  kArgs,
  kInputDims,
  kInputType,
  kMsgElements,
  kDtype,
  kProcessGroup,
  kCorrelation,
  kBytes,
  kRank,
  kWorldSize,
  kBackend,
  kHostName,
  kBaseTime,
};

// By length, then text: this runs for every key of a large file.
Field field_of(std::string_view key) {
  struct Entry {
    std::string_view text;
    Field field;
  };
  static constexpr Entry kFields[] = {
      {"ph", Field::kPh},
      {"ts", Field::kTs},
      {"cat", Field::kCat},
      {"dur", Field::kDur},
      {"pid", Field::kPid},
      {"tid", Field::kTid},
      {"name", Field::kName},
      {"args", Field::kArgs},
      {"rank", Field::kRank},
      {"dtype", Field::kDtype},
      {"bytes", Field::kBytes},
      {"backend", Field::kBackend},
      {"producer", Field::kProducer},
      {"host_name", Field::kHostName},
      {"otherData", Field::kOtherData},
      {"Input Dims", Field::kInputDims},
      {"Input type", Field::kInputType},
      {"world_size", Field::kWorldSize},
      {"traceEvents", Field::kTraceEvents},
      {"correlation", Field::kCorrelation},
      {"In msg nelems", Field::kMsgElements},
      {"distributedInfo", Field::kDistributedInfo},
      {"Process Group ID", Field::kProcessGroup},
      {"Process Group Name", Field::kProcessGroup},
      {"baseTimeNanoseconds", Field::kBaseTime},
  };
  if (key.size() < 2 || key.size() > 19) return Field::kNone;
  for (const Entry& e : kFields) {
    if (e.text.size() == key.size() && e.text[0] == key[0] && e.text == key) return e.field;
  }
  return Field::kNone;
}

// The SAX handler: a stack of where the parser is, keeping only what TraceEvent holds.
class TraceHandler : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, TraceHandler> {
 public:
  explicit TraceHandler(TraceFile& out) : out_(out) {}

  bool Null() {
    last_null_in_events_ = where() == Where::kEvents;
    return scalar(Value{});
  }
  bool Bool(bool) { return scalar(Value{}); }
  bool Int(int v) { return scalar(Value::of_number(v)); }
  bool Uint(unsigned v) { return scalar(Value::of_number(v)); }
  bool Int64(int64_t v) { return scalar(Value::of_number(static_cast<double>(v))); }
  bool Uint64(uint64_t v) { return scalar(Value::of_number(static_cast<double>(v))); }
  bool Double(double v) { return scalar(Value::of_number(v)); }
  bool String(const char* s, rapidjson::SizeType n, bool) {
    return unescaped_control({s, n}) ? false : scalar(Value::of_text({s, n}));
  }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    if (unescaped_control({s, n})) return false;
    const Where at = where();
    const bool used = at == Where::kTop || at == Where::kEvent || at == Where::kArgs || at == Where::kDistributed ||
                      at == Where::kOtherData;
    key_ = used ? field_of({s, n}) : Field::kNone;
    return true;
  }
  bool StartObject() { return open(true); }
  bool EndObject(rapidjson::SizeType) { return close(); }
  bool StartArray() { return open(false); }
  bool EndArray(rapidjson::SizeType) { return close(); }

  bool saw_events() const { return saw_events_; }
  bool too_deep() const { return too_deep_; }
  bool control_character() const { return control_character_; }
  // Whether the last null read was an element of the events array: a part of a file ends with
  // one, which proves the part was cut between two events.
  bool last_null_in_events() const { return last_null_in_events_; }

 private:
  enum class Where { kRoot, kTop, kEvents, kEvent, kArgs, kDims, kDimsInner, kTypes, kDistributed, kOtherData, kSkip };

  struct Value {
    bool is_number = false;
    bool is_text = false;
    double number = 0;
    std::string_view text;
    static Value of_number(double v) { return {true, false, v, {}}; }
    static Value of_text(std::string_view t) { return {false, true, 0, t}; }
    // pid and tid are numbers in Kineto and may be text in the legacy format. Into `out`,
    // reusing its storage (one event after another).
    void write_text(std::string& out) const {
      out.clear();
      if (is_text) {
        out.assign(text);
      } else if (is_number && std::fabs(number) < 9e15 && number == std::floor(number)) {
        char digits[24];  // to_chars, not fmt: this runs twice for every event of a large file
        out.assign(digits, std::to_chars(digits, digits + sizeof digits, static_cast<int64_t>(number)).ptr);
      } else if (is_number) {
        fmt::format_to(std::back_inserter(out), "{}", number);
      }
    }
  };

  // The event being read; its strings keep their storage from one event to the next.
  struct Scratch {
    std::string name, category, phase, pid, tid, collective_dtype, input_type, process_group;
    double ts = NAN, dur = NAN;
    double nelems = -1, bytes = -1, dims_product = -1;
    int64_t correlation = -1;
    bool first_dims_done = false;
    void clear() {
      for (std::string* s : {&name, &category, &phase, &pid, &tid, &collective_dtype, &input_type, &process_group}) {
        s->clear();
      }
      ts = dur = NAN;
      nelems = bytes = dims_product = -1;
      correlation = -1;
      first_dims_done = false;
    }
  };

  Where where() const { return stack_.empty() ? Where::kRoot : stack_.back(); }

  // JSON allows no control character unescaped in a string. RapidJSON's SIMD scans of text in
  // memory (the parts) let 0x1A-0x1F through (they test s <= 0x19), where its stream reading
  // (the one pass) refuses them: the handler refuses them in both.
  bool unescaped_control(std::string_view text) {
    control_character_ =
        std::any_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20; });
    return control_character_;
  }

  bool open(bool object) {
    if (stack_.size() >= kMaxJsonDepth) {
      too_deep_ = true;
      return false;
    }
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
        if (!object && key_ == Field::kTraceEvents) {
          next = Where::kEvents;
          saw_events_ = true;
        } else if (object && key_ == Field::kDistributedInfo) {
          next = Where::kDistributed;
        } else if (object && key_ == Field::kOtherData) {
          next = Where::kOtherData;
        }
        break;
      case Where::kEvents:
        if (object) {
          next = Where::kEvent;
          event_.clear();
        }
        break;
      case Where::kEvent:
        if (object && key_ == Field::kArgs) next = Where::kArgs;
        break;
      case Where::kArgs:
        if (!object && key_ == Field::kInputDims) next = Where::kDims;
        if (!object && key_ == Field::kInputType) next = Where::kTypes;
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
      case Where::kTop:
        if (key_ == Field::kHostName && v.is_text) out_.host_name = std::string(v.text);
        if (key_ == Field::kBaseTime && v.is_number && std::isfinite(v.number)) out_.base_time_ns = v.number;
        break;
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
        if (key_ == Field::kProducer && v.is_text && v.text.starts_with("ddpscope")) {
          out_.dialect =
              v.text.ends_with(" analyze") ? TraceFile::Dialect::kAnalyzeOutput : TraceFile::Dialect::kDdpscope;
        }
        break;
      default:
        break;
    }
    return true;
  }

  void event_field(const Value& v) {
    switch (key_) {
      case Field::kName:
        if (v.is_text) event_.name.assign(v.text);
        break;
      case Field::kCat:
        if (v.is_text) event_.category.assign(v.text);
        break;
      case Field::kPh:
        if (v.is_text) event_.phase.assign(v.text);
        break;
      case Field::kTs:
        if (v.is_number) event_.ts = v.number;
        break;
      case Field::kDur:
        if (v.is_number) event_.dur = v.number;
        break;
      case Field::kPid:
        v.write_text(event_.pid);
        break;
      case Field::kTid:
        v.write_text(event_.tid);
        break;
      default:
        break;
    }
  }

  void arg_field(const Value& v) {
    switch (key_) {
      case Field::kMsgElements:
        if (v.is_number) event_.nelems = v.number;
        break;
      case Field::kDtype:
        if (v.is_text) event_.collective_dtype.assign(v.text);
        break;
      case Field::kProcessGroup:
        v.write_text(event_.process_group);
        break;
      case Field::kCorrelation:
        if (v.is_number) event_.correlation = static_cast<int64_t>(v.number);
        break;
      case Field::kBytes:
        if (v.is_number) event_.bytes = v.number;
        break;
      default:
        break;
    }
  }

  void distributed_field(const Value& v) {
    const bool whole = v.is_number && v.number >= 0 && v.number < 1e9 && v.number == std::floor(v.number);
    if (key_ == Field::kRank && whole) out_.distributed.rank = static_cast<int>(v.number);
    if (key_ == Field::kWorldSize && whole) out_.distributed.world_size = static_cast<int>(v.number);
    if (key_ == Field::kBackend && v.is_text) out_.distributed.backend = std::string(v.text);
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
    thread_key_.assign(e.pid).append("/").append(e.tid);
    t.thread = out_.threads.intern(thread_key_);
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
    out_.add(t);
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
  Field key_ = Field::kNone;
  std::string thread_key_;  // "pid/tid", built in place
  Scratch event_;
  bool saw_events_ = false;
  bool too_deep_ = false;
  bool control_character_ = false;
  bool last_null_in_events_ = false;
};

// The parser's stack (the string being read, the nesting) with a ceiling: a string of gigabytes
// stops the read instead of the machine.
class CappedStackAllocator {
 public:
  struct Exceeded {};
  // RapidJSON's allocator concept: its names, not ours.
  // NOLINTBEGIN(readability-identifier-naming)
  static constexpr bool kNeedFree = true;
  void* Malloc(std::size_t size) { return Realloc(nullptr, 0, size); }
  void* Realloc(void* old, std::size_t, std::size_t size) {
    if (size == 0) {
      std::free(old);
      return nullptr;
    }
    if (size > kStringBufferBytes) throw Exceeded{};
    void* grown = std::realloc(old, size);
    if (grown == nullptr) throw std::bad_alloc();
    return grown;
  }
  static void Free(void* p) { std::free(p); }
  // NOLINTEND(readability-identifier-naming)
};

using Reader = rapidjson::GenericReader<rapidjson::UTF8<>, rapidjson::UTF8<>, CappedStackAllocator>;

[[noreturn]] void string_too_long(const std::string& path) {
  throw DataError(
      fmt::format("{}: holds a string of more than {} MiB, which no profiler writes: not a trace (or a damaged one)",
                  path, (kStringBufferBytes >> 20) * 5 / 8));
}

template <typename Stream>
TraceFile parse(Stream& stream, const std::string& path, const std::function<void()>& on_json_error = {}) {
  TraceFile out;
  out.path = path;
  TraceHandler handler(out);
  Reader reader;
  rapidjson::ParseResult result;
  try {
    // Iterative: a deeply nested file cannot exhaust the stack.
    result = reader.Parse<rapidjson::kParseIterativeFlag>(stream, handler);
  } catch (const CappedStackAllocator::Exceeded&) {
    string_too_long(path);
  }
  if (result.IsError() && on_json_error) on_json_error();
  if (handler.too_deep()) {
    throw DataError(fmt::format("{}: nested more than {} levels deep at byte {}, which no profiler writes: not a trace",
                                path, kMaxJsonDepth, result.Offset()));
  }
  if (handler.control_character()) {
    throw DataError(
        fmt::format("{}: not valid JSON at byte {}: a control character inside a string", path, result.Offset()));
  }
  if (result.IsError()) {
    if (result.Code() == rapidjson::kParseErrorTermination) {
      throw NotATraceError(
          fmt::format("{}: not a trace: its top level is a single value, not an object or array", path));
    }
    throw DataError(fmt::format("{}: not valid JSON at byte {}: {}", path, result.Offset(),
                                rapidjson::GetParseError_En(result.Code())));
  }
  if (!handler.saw_events()) {
    throw NotATraceError(
        fmt::format("{}: not a trace: a JSON object without \"traceEvents\" (Kineto's and Chrome's "
                    "trace format), and not an array of events",
                    path));
  }
  return out;
}

// A UTF-8 byte order mark, which some editors write first: not JSON, and no reason to refuse.
constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";

}  // namespace

std::optional<TraceFile> parse_part_in_place(std::string& text, bool cut_after) {
  TraceFile out;
  TraceHandler handler(out);
  Reader reader;
  // RapidJSON's SIMD scans read whole aligned blocks of 16 bytes, past the closing NUL.
  text.append(16, '\0');
  rapidjson::InsituStringStream stream(text.data());
  rapidjson::ParseResult result;
  try {
    result = reader.Parse<rapidjson::kParseInsituFlag | rapidjson::kParseIterativeFlag>(stream, handler);
  } catch (const CappedStackAllocator::Exceeded&) {
    return std::nullopt;  // the one pass says what is wrong
  }
  if (result.IsError() || !handler.saw_events() || (cut_after && !handler.last_null_in_events())) {
    return std::nullopt;
  }
  return out;
}

TraceFile read_trace(const std::string& path, const std::function<void(double)>& progress) {
  std::error_code error;
  const std::uintmax_t bytes = std::filesystem::file_size(path, error);
  if (!error && bytes >= kPartsFromBytes) {
    if (std::optional<TraceFile> whole = read_trace_in_parts(path, kPartBytes, progress)) return std::move(*whole);
  }
  TraceStream stream(path, progress);
  stream.skip_prefix(kByteOrderMark);
  // A damaged gzip member can inflate to text that fails to parse before its check sum is
  // read: the damage, found by reading on, is what is wrong.
  return parse(stream, path, [&] { stream.read_to_end(); });
}

TraceFile read_trace_text(std::string_view text, const std::string& path) {
  if (text.starts_with(kByteOrderMark)) text.remove_prefix(kByteOrderMark.size());
  rapidjson::MemoryStream stream(text.data(), text.size());
  return parse(stream, path);
}

}  // namespace ddp
