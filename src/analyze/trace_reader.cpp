#include "analyze/trace_reader.h"

#include <fmt/format.h>
#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iterator>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "analyze/trace_fields.h"
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

// The SAX handler: a stack of where the parser is, keeping only what TraceEvent holds.
class TraceHandler : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, TraceHandler> {
 public:
  explicit TraceHandler(TraceFile& out) : out_(out), maker_(out) {}

  bool Null() { return scalar(Value{}); }
  bool Bool(bool) { return scalar(Value{}); }
  bool Int(int v) { return scalar(Value::of_number(v)); }
  bool Uint(unsigned v) { return scalar(Value::of_number(v)); }
  bool Int64(int64_t v) { return scalar(Value::of_number(static_cast<double>(v))); }
  bool Uint64(uint64_t v) { return scalar(Value::of_number(static_cast<double>(v))); }
  bool Double(double v) { return scalar(Value::of_number(v)); }
  bool String(const char* s, rapidjson::SizeType n, bool) { return scalar(Value::of_text({s, n})); }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
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

 private:
  enum class Where { kRoot, kTop, kEvents, kEvent, kArgs, kDims, kDimsInner, kTypes, kDistributed, kOtherData, kSkip };

  struct Value {
    bool is_number = false;
    bool is_text = false;
    double number = 0;
    std::string_view text;
    static Value of_number(double v) { return {true, false, v, {}}; }
    static Value of_text(std::string_view t) { return {false, true, 0, t}; }
    // pid and tid are numbers in Kineto and may be text in the legacy format. Copied: the
    // parser's text is gone after this value.
    void write_text(FieldText& out) const {
      if (is_text) {
        out.keep(text);
      } else if (is_number) {
        out.number(number);
      } else {
        out.text = {};
      }
    }
  };

  Where where() const { return stack_.empty() ? Where::kRoot : stack_.back(); }

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
    if (TraceEvent e; closing == Where::kEvent && maker_.make(event_, e)) out_.add(e);
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
        if (v.is_text && event_.input_type.text.empty()) event_.input_type.keep(v.text);
        break;
      case Where::kDistributed:
        if (v.is_number) distributed_number(key_, v.number, out_);
        if (v.is_text) distributed_text(key_, v.text, out_);
        break;
      case Where::kOtherData:
        if (key_ == Field::kProducer && v.is_text) producer_text(v.text, out_);
        break;
      default:
        break;
    }
    return true;
  }

  void event_field(const Value& v) {
    switch (key_) {
      case Field::kName:
        if (v.is_text) event_.name.keep(v.text);
        break;
      case Field::kCat:
        if (v.is_text) event_.category.keep(v.text);
        break;
      case Field::kPh:
        if (v.is_text) event_.phase.keep(v.text);
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
        if (v.is_text) event_.collective_dtype.keep(v.text);
        break;
      case Field::kProcessGroup:
        v.write_text(event_.process_group);
        break;
      case Field::kCorrelation:
        if (v.is_number) event_.set_correlation(v.number);
        break;
      case Field::kBytes:
        if (v.is_number) event_.bytes = v.number;
        break;
      default:
        break;
    }
  }

  TraceFile& out_;
  std::vector<Where> stack_;
  Field key_ = Field::kNone;
  EventMaker maker_;
  EventFields event_;
  bool saw_events_ = false;
  bool too_deep_ = false;
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

TraceFile read_trace(const std::string& path, const std::function<void(double)>& progress, std::size_t threads) {
  std::error_code error;
  const std::uintmax_t bytes = std::filesystem::file_size(path, error);
  if (!error && bytes >= kPartsFromBytes) {
    if (std::optional<TraceFile> whole = read_trace_in_parts(path, kPartBytes, progress, threads))
      return std::move(*whole);
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
