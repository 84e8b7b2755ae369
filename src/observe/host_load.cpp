#include "observe/host_load.h"

#include <unistd.h>

#include <charconv>
#include <string>
#include <vector>

#include "observe/cpu_usage.h"

namespace ddp {

std::optional<HostLoadSnapshot> parse_host_busy(std::string_view stat_text, double ticks_per_second) {
  std::vector<int> cores;
  for (std::string_view rest = stat_text; !rest.empty();) {
    const std::size_t end = rest.find('\n');
    const std::string_view line = rest.substr(0, end);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
    if (line.size() < 4 || !line.starts_with("cpu") || line[3] < '0' || line[3] > '9') continue;
    int core = -1;
    std::from_chars(line.data() + 3, line.data() + line.size(), core);
    cores.push_back(core);
  }
  const std::optional<CoreJiffies> jiffies = parse_proc_stat(stat_text, cores);
  if (!jiffies || ticks_per_second <= 0) return std::nullopt;
  return HostLoadSnapshot{.busy_core_seconds = static_cast<double>(jiffies->busy) / ticks_per_second,
                          .interrupt_core_seconds = static_cast<double>(jiffies->interrupts) / ticks_per_second,
                          .cores = static_cast<int>(cores.size())};
}

std::optional<HostLoadSnapshot> take_host_load_snapshot() {
  std::string text;
  if (!read_text_file("/proc/stat", text)) return std::nullopt;
  std::optional<HostLoadSnapshot> s = parse_host_busy(text, static_cast<double>(::sysconf(_SC_CLK_TCK)));
  if (s) s->process_cpu_seconds = process_cpu_seconds();
  return s;
}

std::string kernel_boot_id() {
  std::string id;
  if (!read_text_file("/proc/sys/kernel/random/boot_id", id)) return {};
  while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
  return id;
}

}  // namespace ddp
