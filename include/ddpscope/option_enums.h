#pragma once
// The options that name one of a few choices, as enums, each with its spellings in the
// order --help and the error messages list them. The option table parses and prints them
// through these; hparams.yaml and summary.json hold the spellings.
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddp {

enum class Accelerator { kCpu, kCuda, kAuto };
// Lightning's precision names: fp32; fp32 through TF32 tensor cores; bf16 compute with fp32
// master weights and optimizer state. Only k32True runs on a CPU.
enum class Precision { k32True, kTf32, kBf16Mixed };
enum class Strategy { kAuto, kSingle, kDdp, kDdpZero1 };  // kDdpZero1: DDP with ZeRO-1 optimizer shards
// How GPU ranks average gradients, after Lightning's DDPStrategy(process_group_backend=...):
// NCCL on the GPUs, or MPI through host memory; auto: NCCL where it can run.
enum class ProcessGroupBackend { kAuto, kNccl, kMpi };
enum class Profiler { kNone, kSimple, kTrace };
enum class MonitorMode { kBackground, kPerStep };
enum class ProgressMode { kAuto, kOn, kOff };  // auto: on when stderr is a terminal
enum class LoggerKind { kCsv, kTensorBoard, kJsonl };

template <typename E>
struct Spelling {
  E value;
  std::string_view text;
};

// spellings(E{}): every value of E with its text, found by overload on the enum.
constexpr std::array<Spelling<Accelerator>, 3> spellings(Accelerator) {
  return {{{Accelerator::kCpu, "cpu"}, {Accelerator::kCuda, "cuda"}, {Accelerator::kAuto, "auto"}}};
}
constexpr std::array<Spelling<Precision>, 3> spellings(Precision) {
  return {{{Precision::k32True, "32-true"}, {Precision::kTf32, "tf32"}, {Precision::kBf16Mixed, "bf16-mixed"}}};
}
constexpr std::array<Spelling<Strategy>, 4> spellings(Strategy) {
  return {{{Strategy::kAuto, "auto"},
           {Strategy::kSingle, "single"},
           {Strategy::kDdp, "ddp"},
           {Strategy::kDdpZero1, "ddp_zero1"}}};
}
constexpr std::array<Spelling<ProcessGroupBackend>, 3> spellings(ProcessGroupBackend) {
  return {
      {{ProcessGroupBackend::kAuto, "auto"}, {ProcessGroupBackend::kNccl, "nccl"}, {ProcessGroupBackend::kMpi, "mpi"}}};
}
constexpr std::array<Spelling<Profiler>, 3> spellings(Profiler) {
  return {{{Profiler::kNone, "none"}, {Profiler::kSimple, "simple"}, {Profiler::kTrace, "trace"}}};
}
constexpr std::array<Spelling<MonitorMode>, 2> spellings(MonitorMode) {
  return {{{MonitorMode::kBackground, "background"}, {MonitorMode::kPerStep, "per-step"}}};
}
constexpr std::array<Spelling<ProgressMode>, 3> spellings(ProgressMode) {
  return {{{ProgressMode::kAuto, "auto"}, {ProgressMode::kOn, "on"}, {ProgressMode::kOff, "off"}}};
}
constexpr std::array<Spelling<LoggerKind>, 3> spellings(LoggerKind) {
  return {{{LoggerKind::kCsv, "csv"}, {LoggerKind::kTensorBoard, "tensorboard"}, {LoggerKind::kJsonl, "jsonl"}}};
}

template <typename E>
constexpr std::string_view spelling(E value) {
  for (const auto& s : spellings(E{})) {
    if (s.value == value) return s.text;
  }
  return "?";
}

template <typename E>
constexpr std::optional<E> from_spelling(std::string_view text) {
  for (const auto& s : spellings(E{})) {
    if (s.text == text) return s.value;
  }
  return std::nullopt;
}

// --logger: the loggers in the order given; empty is "none".
using LoggerList = std::vector<LoggerKind>;

// "csv,jsonl" or "none": a list of known names, each at most once, or none alone. On a
// bad list returns nullopt and says why in `expected` (the message's "expected ..." part).
std::optional<LoggerList> parse_logger_list(const std::string& text, std::string& expected);
std::string logger_list_text(const LoggerList& loggers);

}  // namespace ddp
