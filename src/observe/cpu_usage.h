#pragma once
// CPU utilization from Linux's /proc: the busy share of a set of cores (/proc/stat) and the
// process's own CPU time (/proc/self/stat, or the kernel's per-process clock). The parsers
// are pure functions over the files' text so they can be tested on fixed snippets; the
// readers reuse a caller's buffer, so a sampler that keeps one allocates nothing per read.
#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ddp {

// The shortest window a utilization is measured over: /proc's counters move in whole jiffies
// (10 ms), so a share over one or two of them is 0 or 100 % whatever the truth; over 5 it is
// within 20 %. Shorter windows are merged into the next (their sample repeats the last value).
inline constexpr std::chrono::milliseconds kMinUtilizationWindow{50};

// Jiffies (USER_HZ ticks, usually 10 ms) summed over some cores since boot.
struct CoreJiffies {
  uint64_t busy = 0;        // every state but idle and iowait
  uint64_t total = 0;       // every state
  uint64_t interrupts = 0;  // irq and softirq, part of busy
};

// Sums the "cpuN" lines of /proc/stat text for N in `cores`. nullopt when a requested core
// has no line or a line is malformed. The aggregate "cpu " line is never used.
std::optional<CoreJiffies> parse_proc_stat(std::string_view text, std::span<const int> cores);

// utime + stime, in clock ticks, from /proc/<pid>/stat text; nullopt when malformed.
std::optional<uint64_t> parse_proc_pid_stat_ticks(std::string_view text);

// The busy share of the cores between two readings, in 0..100; nullopt when no tick
// elapsed between them (the counters move in whole jiffies, so readings closer than one
// jiffy often see no change at all) or when the counters went backwards.
std::optional<double> busy_percent(const CoreJiffies& before, const CoreJiffies& after);

// The cores the calling thread may run on (sched_getaffinity): a rank's pinned core(s).
std::vector<int> affinity_cores();

// Reads `path` whole into `buffer`, reusing its capacity; false (errno set) on failure.
bool read_text_file(const char* path, std::string& buffer);

// /proc/stat read into `buffer` and summed over `cores`.
std::optional<CoreJiffies> read_core_jiffies(std::span<const int> cores, std::string& buffer);

// The process's CPU time in seconds from /proc/self/stat (tick resolution), read into `buffer`.
std::optional<double> read_process_cpu_seconds_proc(std::string& buffer);

// The process's CPU time in seconds from CLOCK_PROCESS_CPUTIME_ID: nanosecond resolution
// and no file to open, so the background sampler uses it.
double process_cpu_seconds();

}  // namespace ddp
