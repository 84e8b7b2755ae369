#pragma once
// What both JSON parsers of the trace reader share: the keys it uses, and one event's fields
// as read, turned into a TraceEvent of a TraceFile. The one pass (RapidJSON, streaming) and
// the parts (simdjson On-Demand) differ only in how they walk the text.
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "analyze/trace_file.h"

namespace ddp {

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

// This runs for every key of a large file.
Field field_of(std::string_view key);

// A number as a pid, a tid or a process group is written: an integer's digits, else as fmt
// writes a double. Into `out`, reusing its storage.
void write_number_text(double number, std::string& out);

// One text field of the event being read: a view of the parser's text where that stays put
// until the event is made (simdjson's parts), else of a copy kept here, whose storage serves
// one event after another.
struct FieldText {
  std::string_view text;
  std::string copy;
  void view(std::string_view s) { text = s; }
  void keep(std::string_view s) {
    copy.assign(s);
    text = copy;
  }
  void number(double v) {
    write_number_text(v, copy);
    text = copy;
  }
};

// The event being read.
struct EventFields {
  FieldText name, category, phase, pid, tid, collective_dtype, input_type, process_group;
  double ts = NAN, dur = NAN;
  double nelems = -1, bytes = -1, dims_product = -1;
  int64_t correlation = -1;
  // Kineto's correlation id, as a JSON number; one no int64 holds is none.
  void set_correlation(double id) { correlation = std::fabs(id) < 9e18 ? static_cast<int64_t>(id) : -1; }
  bool first_dims_done = false;
  void clear();
};

// Makes the TraceEvents of one file from its events' fields, interning names and threads
// into the file's tables.
class EventMaker {
 public:
  explicit EventMaker(TraceFile& file) : file_(file) {}
  // False for an event the analysis does not use (not a complete event of a known kind, named
  // and timed).
  bool make(const EventFields& e, TraceEvent& out);

 private:
  uint32_t thread_of(std::string_view pid, std::string_view tid);
  EventKind kind_of(std::string_view category);

  TraceFile& file_;
  std::string thread_key_;  // "pid/tid", built in place
  // The last thread found: a file's events come in runs of one thread.
  std::string last_pid_, last_tid_;
  uint32_t last_thread_ = 0;
  std::string last_category_ = "\x01";  // no category's text
  EventKind last_kind_ = EventKind::kOther;
};

// What the file says of itself at its top level: distributedInfo's rank and world_size
// (numbers) and backend (text), otherData's producer.
void distributed_number(Field key, double number, TraceFile& out);
void distributed_text(Field key, std::string_view text, TraceFile& out);
void producer_text(std::string_view text, TraceFile& out);

}  // namespace ddp
