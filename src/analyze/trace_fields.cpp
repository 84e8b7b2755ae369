#include "analyze/trace_fields.h"

#include <fmt/format.h>

#include <charconv>
#include <cstring>
#include <iterator>

namespace ddp {
namespace {

EventKind kind_of_category(std::string_view category) {
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

int64_t pid_number(std::string_view pid) {
  if (pid.empty() || pid.size() > 18) return -1;
  for (char c : pid) {
    if (c < '0' || c > '9') return -1;
  }
  return std::stoll(std::string(pid));
}

// `key`, whose length is the text's (field_of switches on it), is the text: a compare of a
// known length, which the compiler makes a few loads instead of a call.
template <std::size_t N>
bool is(std::string_view key, const char (&text)[N]) {
  return std::memcmp(key.data(), text, N - 1) == 0;
}

}  // namespace

Field field_of(std::string_view key) {
  // By length first: one or two comparisons of a few bytes for any key.
  switch (key.size()) {
    case 2:
      return is(key, "ph") ? Field::kPh : is(key, "ts") ? Field::kTs : Field::kNone;
    case 3:
      return is(key, "cat")   ? Field::kCat
             : is(key, "dur") ? Field::kDur
             : is(key, "pid") ? Field::kPid
             : is(key, "tid") ? Field::kTid
                              : Field::kNone;
    case 4:
      return is(key, "name")   ? Field::kName
             : is(key, "args") ? Field::kArgs
             : is(key, "rank") ? Field::kRank
                               : Field::kNone;
    case 5:
      return is(key, "dtype") ? Field::kDtype : is(key, "bytes") ? Field::kBytes : Field::kNone;
    case 7:
      return is(key, "backend") ? Field::kBackend : Field::kNone;
    case 8:
      return is(key, "producer") ? Field::kProducer : Field::kNone;
    case 9:
      return is(key, "host_name") ? Field::kHostName : is(key, "otherData") ? Field::kOtherData : Field::kNone;
    case 10:
      return is(key, "Input Dims")   ? Field::kInputDims
             : is(key, "Input type") ? Field::kInputType
             : is(key, "world_size") ? Field::kWorldSize
                                     : Field::kNone;
    case 11:
      return is(key, "traceEvents") ? Field::kTraceEvents : is(key, "correlation") ? Field::kCorrelation : Field::kNone;
    case 13:
      return is(key, "In msg nelems") ? Field::kMsgElements : Field::kNone;
    case 15:
      return is(key, "distributedInfo") ? Field::kDistributedInfo : Field::kNone;
    case 16:
      return is(key, "Process Group ID") ? Field::kProcessGroup : Field::kNone;
    case 18:
      return is(key, "Process Group Name") ? Field::kProcessGroup : Field::kNone;
    case 19:
      return is(key, "baseTimeNanoseconds") ? Field::kBaseTime : Field::kNone;
    default:
      return Field::kNone;
  }
}

void write_number_text(double number, std::string& out) {
  out.clear();
  if (std::fabs(number) < 9e15 && number == std::floor(number)) {
    char digits[24];  // to_chars, not fmt: this runs twice for every event of a large file
    out.assign(digits, std::to_chars(digits, digits + sizeof digits, static_cast<int64_t>(number)).ptr);
  } else {
    fmt::format_to(std::back_inserter(out), "{}", number);
  }
}

void EventFields::clear() {
  // One store each: a loop or a chain of assignments here made GCC load back what it had just
  // stored, a stall on every event.
  name.text = {};
  category.text = {};
  phase.text = {};
  pid.text = {};
  tid.text = {};
  collective_dtype.text = {};
  input_type.text = {};
  process_group.text = {};
  ts = dur = NAN;
  nelems = bytes = dims_product = -1;
  correlation = -1;
  first_dims_done = false;
}

uint32_t EventMaker::thread_of(std::string_view pid, std::string_view tid) {
  if (last_thread_ != 0 && pid == last_pid_ && tid == last_tid_) return last_thread_;
  const std::size_t threads = file_.threads.size();
  thread_key_.assign(pid).append("/").append(tid);
  last_thread_ = file_.threads.intern(thread_key_);
  if (file_.threads.size() > threads) file_.thread_pid.push_back(pid_number(pid));
  last_pid_ = pid;
  last_tid_ = tid;
  return last_thread_;
}

EventKind EventMaker::kind_of(std::string_view category) {
  if (category != last_category_) {
    last_category_ = category;
    last_kind_ = kind_of_category(category);
  }
  return last_kind_;
}

bool EventMaker::make(const EventFields& e, TraceEvent& out) {
  if (e.phase.text != "X" || e.name.text.empty() || !std::isfinite(e.ts) || !std::isfinite(e.dur) || e.dur < 0) {
    return false;
  }
  const EventKind kind = kind_of(e.category.text);
  if (kind == EventKind::kOther) return false;
  // Microseconds (Chrome's trace format) to integer nanoseconds; a start plus a duration must fit
  // int64 (beyond 126 years is no time).
  if (std::fabs(e.ts) > 4e15 || e.dur > 4e15) return false;
  out = TraceEvent{};
  out.start_ns = std::llround(e.ts * 1e3);
  out.duration_ns = std::llround(e.dur * 1e3);
  out.name = file_.names.intern(e.name.text);
  out.thread = thread_of(e.pid.text, e.tid.text);
  out.kind = kind;
  double bytes = e.bytes;
  if (bytes < 0 && e.nelems >= 0) bytes = e.nelems * static_cast<double>(element_bytes(e.collective_dtype.text));
  if (bytes < 0 && e.dims_product >= 0 && !e.input_type.text.empty()) {
    bytes = e.dims_product * static_cast<double>(element_bytes(e.input_type.text));
  }
  out.bytes = bytes > 0 && bytes < 9e18 ? static_cast<int64_t>(bytes) : -1;
  if (!e.process_group.text.empty()) out.process_group = file_.names.intern(e.process_group.text);
  out.correlation = e.correlation;
  return true;
}

void distributed_number(Field key, double number, TraceFile& out) {
  const bool whole = number >= 0 && number < 1e9 && number == std::floor(number);
  if (key == Field::kRank && whole) out.distributed.rank = static_cast<int>(number);
  if (key == Field::kWorldSize && whole) out.distributed.world_size = static_cast<int>(number);
}

void distributed_text(Field key, std::string_view text, TraceFile& out) {
  if (key == Field::kBackend) out.distributed.backend = std::string(text);
}

void producer_text(std::string_view text, TraceFile& out) {
  if (text.starts_with("ddpscope")) {
    out.dialect = text.ends_with(" analyze") ? TraceFile::Dialect::kAnalyzeOutput : TraceFile::Dialect::kDdpscope;
  }
}

}  // namespace ddp
