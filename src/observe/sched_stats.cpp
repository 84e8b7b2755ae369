#include "observe/sched_stats.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <string>
#include <vector>

#include "base/check.h"
#include "ddpscope/error.h"
#include "observe/cpu_usage.h"

namespace ddp {
namespace {

// Splits `line` at spaces and tabs into unsigned numbers and stores the first out.size();
// returns how many numbers the line holds, nullopt when a field is not one.
std::optional<std::size_t> parse_numbers(std::string_view line, std::span<uint64_t> out) {
  std::size_t count = 0;
  while (true) {
    const std::size_t begin = line.find_first_not_of(" \t");
    if (begin == std::string_view::npos) return count;
    line.remove_prefix(begin);
    const std::size_t end = std::min(line.find_first_of(" \t"), line.size());
    uint64_t value = 0;
    const auto [stop, error] = std::from_chars(line.data(), line.data() + end, value);
    if (error != std::errc{} || stop != line.data() + end) return std::nullopt;
    if (count < out.size()) out[count] = value;
    ++count;
    line.remove_prefix(end);
  }
}

// Cuts the first line off `text` (without its newline).
std::string_view take_line(std::string_view& text) {
  const std::size_t end = std::min(text.find('\n'), text.size());
  const std::string_view line = text.substr(0, end);
  text.remove_prefix(std::min(end + 1, text.size()));
  return line;
}

// The one number after `key` on a status line shaped "key\t<n>"; nullopt otherwise.
std::optional<uint64_t> status_value(std::string_view line, std::string_view key) {
  if (!line.starts_with(key)) return std::nullopt;
  std::array<uint64_t, 1> value{};
  if (parse_numbers(line.substr(key.size()), value) != 1) return std::nullopt;
  return value[0];
}

double ticks_to_seconds(uint64_t ticks) {
  static const long kTicksPerSecond = sysconf(_SC_CLK_TCK);
  return static_cast<double>(ticks) / static_cast<double>(kTicksPerSecond > 0 ? kTicksPerSecond : 100);
}

}  // namespace

std::optional<SchedStat> parse_schedstat(std::string_view text) {
  std::array<uint64_t, 3> field{};
  if (parse_numbers(take_line(text), field) != 3) return std::nullopt;
  return SchedStat{.run_ns = field[0], .wait_ns = field[1], .timeslices = field[2]};
}

std::optional<ContextSwitches> parse_ctxt_switches(std::string_view status_text) {
  std::optional<uint64_t> voluntary;
  std::optional<uint64_t> involuntary;
  while (!status_text.empty()) {
    const std::string_view line = take_line(status_text);
    if (line.starts_with("voluntary_ctxt_switches:")) {
      voluntary = status_value(line, "voluntary_ctxt_switches:");
      if (!voluntary) return std::nullopt;
    } else if (line.starts_with("nonvoluntary_ctxt_switches:")) {
      involuntary = status_value(line, "nonvoluntary_ctxt_switches:");
      if (!involuntary) return std::nullopt;
    }
  }
  if (!voluntary || !involuntary) return std::nullopt;
  return ContextSwitches{.voluntary = *voluntary, .involuntary = *involuntary};
}

std::optional<uint64_t> parse_steal_ticks(std::string_view stat_text, std::span<const int> cores) {
  uint64_t steal = 0;
  std::size_t found = 0;
  while (!stat_text.empty()) {
    std::string_view line = take_line(stat_text);
    if (!line.starts_with("cpu") || line.size() < 4 || line[3] < '0' || line[3] > '9') continue;
    line.remove_prefix(3);
    int core = -1;
    const auto [stop, error] = std::from_chars(line.data(), line.data() + line.size(), core);
    if (error != std::errc{} || stop == line.data() + line.size() || *stop != ' ') return std::nullopt;
    if (std::find(cores.begin(), cores.end(), core) == cores.end()) continue;
    line.remove_prefix(static_cast<std::size_t>(stop - line.data()));

    // user nice system idle iowait irq softirq steal ...: steal is the 8th.
    std::array<uint64_t, 8> field{};
    const std::optional<std::size_t> count = parse_numbers(line, field);
    if (!count || *count < 4) return std::nullopt;
    steal += *count >= field.size() ? field[7] : 0;
    ++found;
  }
  if (found != cores.size() || cores.empty()) return std::nullopt;
  return steal;
}

std::optional<SchedSnapshot> take_sched_snapshot() { return take_sched_snapshot(static_cast<int>(gettid())); }

std::optional<SchedSnapshot> take_sched_snapshot(int tid) {
  std::string buffer;
  std::array<char, 64> path{};
  SchedSnapshot snapshot;
  snapshot.tid = tid;

  std::snprintf(path.data(), path.size(), "/proc/self/task/%d/schedstat", tid);
  if (!read_text_file(path.data(), buffer)) return std::nullopt;
  const std::optional<SchedStat> sched = parse_schedstat(buffer);
  if (!sched) return std::nullopt;
  snapshot.sched = *sched;

  std::snprintf(path.data(), path.size(), "/proc/self/task/%d/status", tid);
  if (!read_text_file(path.data(), buffer)) return std::nullopt;
  const std::optional<ContextSwitches> switches = parse_ctxt_switches(buffer);
  if (!switches) return std::nullopt;
  snapshot.switches = *switches;

  // The calling thread's cores: a rank's threads share the binding mpirun gave it.
  const std::vector<int> cores = affinity_cores();
  if (read_text_file("/proc/stat", buffer)) {
    const std::optional<uint64_t> steal = parse_steal_ticks(buffer, cores);
    if (steal) snapshot.steal_seconds = ticks_to_seconds(*steal);
  }
  return snapshot;
}

SchedDelta delta(const SchedSnapshot& before, const SchedSnapshot& after) {
  DDP_CHECK_EQ(before.tid, after.tid, "snapshots of two threads");
  DDP_CHECK(after.sched.run_ns >= before.sched.run_ns && after.sched.wait_ns >= before.sched.wait_ns,
            "schedstat went backwards: snapshots out of order");
  DDP_CHECK(after.switches.voluntary >= before.switches.voluntary &&
                after.switches.involuntary >= before.switches.involuntary,
            "context switches went backwards: snapshots out of order");
  SchedDelta d;
  const uint64_t run_ns = after.sched.run_ns - before.sched.run_ns;
  const uint64_t wait_ns = after.sched.wait_ns - before.sched.wait_ns;
  d.run_seconds = 1e-9 * static_cast<double>(run_ns);
  d.wait_seconds = 1e-9 * static_cast<double>(wait_ns);
  d.wait_share = run_ns + wait_ns == 0 ? 0.0 : static_cast<double>(wait_ns) / static_cast<double>(run_ns + wait_ns);
  d.voluntary_switches = after.switches.voluntary - before.switches.voluntary;
  d.involuntary_switches = after.switches.involuntary - before.switches.involuntary;
  // Sums over other cores when the thread's affinity changed in between: no steal then.
  if (before.steal_seconds && after.steal_seconds && *after.steal_seconds >= *before.steal_seconds) {
    d.steal_seconds = *after.steal_seconds - *before.steal_seconds;
  }
  return d;
}

}  // namespace ddp
