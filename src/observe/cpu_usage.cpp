#include "observe/cpu_usage.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <ctime>

namespace ddp {
namespace {

std::string_view next_line(std::string_view& text) {
  const std::size_t end = text.find('\n');
  const std::string_view line = text.substr(0, end);
  text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
  return line;
}

// Parses the next unsigned number after spaces; false at the end or on anything else.
bool next_number(std::string_view& text, uint64_t& value) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc{}) return false;
  text.remove_prefix(static_cast<std::size_t>(end - text.data()));
  return text.empty() || text.front() == ' ';
}

bool skip_token(std::string_view& text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  if (text.empty()) return false;
  const std::size_t end = text.find(' ');
  text.remove_prefix(end == std::string_view::npos ? text.size() : end);
  return true;
}

}  // namespace

std::optional<CoreJiffies> parse_proc_stat(std::string_view text, std::span<const int> cores) {
  CoreJiffies sum;
  std::size_t found = 0;
  while (!text.empty()) {
    std::string_view line = next_line(text);
    if (!line.starts_with("cpu") || line.size() < 4 || line[3] < '0' || line[3] > '9') continue;
    line.remove_prefix(3);
    int core = -1;
    const auto [end, error] = std::from_chars(line.data(), line.data() + line.size(), core);
    if (error != std::errc{}) return std::nullopt;
    if (std::find(cores.begin(), cores.end(), core) == cores.end()) continue;
    line.remove_prefix(static_cast<std::size_t>(end - line.data()));

    // user nice system idle iowait irq softirq steal guest guest_nice; older kernels stop
    // after idle. guest and guest_nice are already counted in user and nice, so they are
    // left out of the total (as top and psutil do).
    std::array<uint64_t, 8> field{};
    std::size_t count = 0;
    uint64_t ignored = 0;
    while (count < field.size() && next_number(line, field[count])) ++count;
    while (next_number(line, ignored)) {
    }
    if (count < 4 || line.find_first_not_of(' ') != std::string_view::npos) return std::nullopt;
    uint64_t total = 0;
    for (std::size_t i = 0; i < count; ++i) total += field[i];
    const uint64_t idle = field[3] + field[4];  // field[4] stays 0 where iowait is absent
    sum.busy += total - idle;
    sum.interrupts += field[5] + field[6];  // 0 where the line stops before them
    sum.total += total;
    ++found;
  }
  if (found != cores.size() || cores.empty()) return std::nullopt;
  return sum;
}

std::optional<uint64_t> parse_proc_pid_stat_ticks(std::string_view text) {
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so the fields start
  // after the last ')'. utime and stime are fields 14 and 15, the 12th and 13th after it.
  const std::size_t paren = text.rfind(')');
  if (paren == std::string_view::npos) return std::nullopt;
  text.remove_prefix(paren + 1);
  if (const std::size_t newline = text.find('\n'); newline != std::string_view::npos) text = text.substr(0, newline);
  for (int i = 0; i < 11; ++i) {
    if (!skip_token(text)) return std::nullopt;
  }
  uint64_t utime = 0;
  uint64_t stime = 0;
  if (!next_number(text, utime) || !next_number(text, stime)) return std::nullopt;
  return utime + stime;
}

std::optional<double> busy_percent(const CoreJiffies& before, const CoreJiffies& after) {
  if (after.total <= before.total || after.busy < before.busy) return std::nullopt;
  const double total = static_cast<double>(after.total - before.total);
  const double busy = static_cast<double>(after.busy - before.busy);
  return std::clamp(100.0 * busy / total, 0.0, 100.0);
}

std::vector<int> affinity_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cores;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cores;
  for (int core = 0; core < CPU_SETSIZE; ++core) {
    if (CPU_ISSET(core, &set)) cores.push_back(core);
  }
  return cores;
}

bool read_text_file(const char* path, std::string& buffer) {
  buffer.clear();
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  // /proc files report size 0, so read until the end, growing only when the buffer is full.
  std::size_t used = 0;
  while (true) {
    if (buffer.capacity() - used < 4096) buffer.reserve(std::max<std::size_t>(2 * buffer.capacity(), 8192));
    buffer.resize(buffer.capacity());
    const ssize_t n = ::read(fd, buffer.data() + used, buffer.size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int saved = errno;
      ::close(fd);
      buffer.clear();
      errno = saved;
      return false;
    }
    if (n == 0) break;
    used += static_cast<std::size_t>(n);
  }
  ::close(fd);
  buffer.resize(used);
  return true;
}

std::optional<CoreJiffies> read_core_jiffies(std::span<const int> cores, std::string& buffer) {
  if (!read_text_file("/proc/stat", buffer)) return std::nullopt;
  return parse_proc_stat(buffer, cores);
}

std::optional<double> read_process_cpu_seconds_proc(std::string& buffer) {
  if (!read_text_file("/proc/self/stat", buffer)) return std::nullopt;
  const std::optional<uint64_t> ticks = parse_proc_pid_stat_ticks(buffer);
  if (!ticks) return std::nullopt;
  static const long kTicksPerSecond = sysconf(_SC_CLK_TCK);
  return static_cast<double>(*ticks) / static_cast<double>(kTicksPerSecond > 0 ? kTicksPerSecond : 100);
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace ddp
