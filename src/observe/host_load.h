#pragma once
// What the host's cores did while the ranks trained, against the ranks' own CPU time: the CPU
// time that other processes took. A busy machine slows the ranks, and a prediction fitted on
// it is off (measured: 76 % with another process using one of two cores, 9.3 % quiet), so the
// runs say it. Both counters are cumulative: the busy time of every "cpuN" line of /proc/stat
// (every state but idle and iowait), and this process's CPU time (every thread). The kernel's
// interrupt work (irq, softirq) is kept apart: on a quiet machine it is mostly the job's own
// network (measured: 0.38-0.44 s of softirq in a 1 s 2-host run on a link shaped to 1 Gbit/s,
// where unshaped it was 0.01 s), not another process.
#include <optional>
#include <string>
#include <string_view>

namespace ddp {

struct HostLoadSnapshot {
  double busy_core_seconds = 0;       // the host's cores since boot
  double interrupt_core_seconds = 0;  // of which irq and softirq
  double process_cpu_seconds = 0;     // this process's
  int cores = 0;                      // "cpuN" lines
};

// The busy seconds and the count of the "cpuN" lines of /proc/stat text at ticks_per_second
// (USER_HZ); nullopt when there is none or one is malformed.
std::optional<HostLoadSnapshot> parse_host_busy(std::string_view stat_text, double ticks_per_second);

// Now; nullopt where /proc/stat cannot be read.
std::optional<HostLoadSnapshot> take_host_load_snapshot();

// The running kernel's boot id. Host names that share it (network namespaces, containers: the
// local cluster's hosts) share one machine's cores and one /proc/stat, so their ranks are one
// machine's own. Empty where it cannot be read.
std::string kernel_boot_id();

}  // namespace ddp
