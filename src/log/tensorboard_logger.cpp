#include "log/tensorboard_logger.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>

#include "log/crc32c.h"
#include "log/file_io.h"
#include "log/protobuf_wire.h"

namespace ddp {
namespace {

// Field numbers of tensorflow/core/util/event.proto and framework/summary.proto.
constexpr int kEventWallTime = 1;     // double
constexpr int kEventStep = 2;         // int64
constexpr int kEventFileVersion = 3;  // string
constexpr int kEventSummary = 5;      // Summary
constexpr int kSummaryValue = 1;      // repeated Summary.Value
constexpr int kValueTag = 1;          // string
constexpr int kValueSimpleValue = 2;  // float

double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string host_name() {
  char name[HOST_NAME_MAX + 1] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  std::string host = name;
  std::replace(host.begin(), host.end(), '/', '_');  // it becomes part of a file name
  return host;
}

// TFRecord framing: length (uint64 LE), masked CRC of those 8 bytes, payload, masked CRC of it.
void append_record(std::string& out, std::string_view payload) {
  auto append_u32 = [&out](uint32_t v) {
    for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFFu);
  };
  std::string length;
  for (int i = 0; i < 8; ++i) length += static_cast<char>((uint64_t{payload.size()} >> (8 * i)) & 0xFFu);
  out += length;
  append_u32(mask_crc32c(crc32c(length)));
  out.append(payload);
  append_u32(mask_crc32c(crc32c(payload)));
}

}  // namespace

TensorBoardLogger::TensorBoardLogger(const std::filesystem::path& run_dir) {
  const double now = unix_seconds();
  path_ = run_dir / fmt::format("events.out.tfevents.{}.{}", static_cast<int64_t>(now), host_name());
  std::string event;
  protobuf::append_double_field(event, kEventWallTime, now);
  protobuf::append_bytes_field(event, kEventFileVersion, "brain.Event:2");
  std::string record;
  append_record(record, event);
  write_file_atomically(path_, record);
}

TensorBoardLogger::~TensorBoardLogger() {
  try {
    flush();
  } catch (...) {  // a destructor must not throw; the trainer flushed and reported already
  }
}

void TensorBoardLogger::log_metrics(const Metrics& metrics, int64_t /*epoch*/, int64_t step) {
  // Only the metrics given: TensorBoard's x axis is the step, the epoch is not a scalar here.
  std::string summary, value;
  for (const auto& [name, number] : metrics) {
    value.clear();
    protobuf::append_bytes_field(value, kValueTag, name);
    protobuf::append_float_field(value, kValueSimpleValue, static_cast<float>(number));
    protobuf::append_bytes_field(summary, kSummaryValue, value);
  }
  std::string event;
  protobuf::append_double_field(event, kEventWallTime, unix_seconds());
  protobuf::append_int64_field(event, kEventStep, step);
  protobuf::append_bytes_field(event, kEventSummary, summary);
  append_record(pending_, event);
}

void TensorBoardLogger::flush() {
  if (pending_.empty()) return;
  append_to_file(path_, pending_);  // all or nothing: a failed append is cut back
  pending_.clear();
}

}  // namespace ddp
