#pragma once
// What a thread can see about waiting for its core, from Linux's /proc:
//   /proc/self/task/<tid>/schedstat   "<on-cpu ns> <run-queue wait ns> <timeslices>\n"
//   /proc/self/task/<tid>/status      "voluntary_ctxt_switches:\t<n>\n"
//                                     "nonvoluntary_ctxt_switches:\t<n>\n" (among other lines)
//   /proc/stat                        "cpuN user nice system idle iowait irq softirq steal ..."
//                                     in USER_HZ ticks (sysconf(_SC_CLK_TCK))
// The per-thread files are used, not /proc/self/schedstat and /proc/self/status: those
// count the main thread only (the kernel reads them from the thread group leader), which
// is the wrong thread for a caller that is not the main one.
//
// Between two snapshots of one thread:
//   wait_share = wait / (wait + run)
// the share of the time it was runnable that it spent waiting for a core: near 0 when it
// has its core to itself, about 1/2 when one other spinner shares it. Involuntary switches
// count preemptions (another task took the core); steal is time the hypervisor gave the
// process's cores to another guest.
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace ddp {

struct SchedStat {
  uint64_t run_ns = 0;   // on a core
  uint64_t wait_ns = 0;  // runnable, waiting in a run queue
  uint64_t timeslices = 0;
};

struct ContextSwitches {
  uint64_t voluntary = 0;    // the thread blocked (a read, a lock, a sleep)
  uint64_t involuntary = 0;  // the thread was preempted while runnable
};

// The three numbers of a schedstat file; nullopt when malformed.
std::optional<SchedStat> parse_schedstat(std::string_view text);

// Both counters of a status file; nullopt when either line is missing or malformed.
std::optional<ContextSwitches> parse_ctxt_switches(std::string_view status_text);

// Steal ticks summed over the "cpuN" lines for N in `cores`; a line that stops before the
// steal field (kernels before 2.6.11) counts 0. nullopt when a requested core has no line,
// a line is malformed, or `cores` is empty.
std::optional<uint64_t> parse_steal_ticks(std::string_view stat_text, std::span<const int> cores);

struct SchedSnapshot {
  int tid = 0;  // the thread read; deltas are only meaningful for one thread
  SchedStat sched;
  ContextSwitches switches;
  // Over the cores the thread may use at the snapshot; nullopt where /proc/stat does not
  // list them (a container that renumbers its cores).
  std::optional<double> steal_seconds;
};

// The calling thread, or thread `tid` of this process. nullopt when its schedstat or
// status file cannot be read or parsed (a kernel without CONFIG_SCHED_INFO, an ended thread).
std::optional<SchedSnapshot> take_sched_snapshot();
std::optional<SchedSnapshot> take_sched_snapshot(int tid);

struct SchedDelta {
  double run_seconds = 0;
  double wait_seconds = 0;
  double wait_share = 0;  // 0 when the thread neither ran nor waited
  uint64_t voluntary_switches = 0;
  uint64_t involuntary_switches = 0;
  std::optional<double> steal_seconds;  // nullopt when either snapshot lacks it
};

// after - before, for two snapshots of one thread taken in that order (checked).
SchedDelta delta(const SchedSnapshot& before, const SchedSnapshot& after);
inline SchedDelta operator-(const SchedSnapshot& after, const SchedSnapshot& before) { return delta(before, after); }

}  // namespace ddp
