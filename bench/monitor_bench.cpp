// What watching a device costs: the background sampler's share of a busy loop
// on the same core, and one per-step probe (the seed's habit) in microseconds.
//
//   build/release/bench/monitor_bench [rounds]     # default 9; prints a markdown table
//
// The process pins itself to one core first, as a rank is pinned, so the sampler thread
// competes with the loop for that core exactly as it does with a training step.
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "observe/cpu_usage.h"
#include "observe/device_monitor.h"

namespace ddp {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// A fixed amount of arithmetic, about 0.3 s on one core: the "training" being watched.
double busy_loop() {
  volatile double sink = 0;
  const Clock::time_point start = Clock::now();
  double x = 0;
  for (int i = 0; i < 150'000'000; ++i) x += std::sqrt(static_cast<double>(i & 1023));
  sink = x;
  (void)sink;
  return seconds_since(start);
}

// Microseconds per call, the median of `rounds` batches of `calls`.
template <typename Function>
double microseconds_per_call(int rounds, int calls, Function&& function) {
  std::vector<double> per_call;
  for (int r = 0; r < rounds; ++r) {
    const Clock::time_point start = Clock::now();
    for (int i = 0; i < calls; ++i) function();
    per_call.push_back(1e6 * seconds_since(start) / calls);
  }
  return median(per_call);
}

int run(int rounds) {
  const std::vector<int> cores = affinity_cores();
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cores.at(0), &one);
  pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
  const std::vector<int> pinned = affinity_cores();

  // The sampler's work per tick, read by read (what it adds every interval_ms).
  std::string buffer;
  buffer.reserve(16384);
  const double proc_stat_us = microseconds_per_call(rounds, 2000, [&] { (void)read_core_jiffies(pinned, buffer); });
  const double cpu_clock_us = microseconds_per_call(rounds, 2000, [] { (void)process_cpu_seconds(); });

  // The busy loop with the sampler off and on (100 ms, the default), interleaved so that
  // the machine's other load falls on both alike.
  std::vector<double> off, on;
  std::size_t samples = 0;
  for (int r = 0; r < rounds; ++r) {
    off.push_back(busy_loop());
    DeviceMonitor monitor({.interval_ms = 100});
    monitor.start();
    on.push_back(busy_loop());
    monitor.stop();
    samples += monitor.sample_count();
  }
  const double off_s = median(off);
  const double on_s = median(on);

  // The seed's habit, per step: /proc only (a CPU rank), and with the NVML cycle attempted
  // (here the library is absent, so that is a failed dlopen every step).
  PerStepProbe cpu_probe(MonitorOptions{});
  const double probe_cpu_us = microseconds_per_call(rounds, 500, [&] { (void)cpu_probe.probe_once(); });
  PerStepProbe gpu_probe({.gpu = true});
  const double probe_gpu_us = microseconds_per_call(rounds, 500, [&] { (void)gpu_probe.probe_once(); });

  std::printf("\n| measurement | value |\n|---|---|\n");
  std::printf("| sampler tick: read /proc/stat and sum the pinned core | %.1f us |\n", proc_stat_us);
  std::printf("| sampler tick: process CPU clock | %.2f us |\n", cpu_clock_us);
  std::printf("| sampler work at 100 ms, from the two reads above | %.4f %% of a core |\n",
              100.0 * (proc_stat_us + cpu_clock_us) * 1e-6 / 0.1);
  std::printf("| busy loop, sampler off (median of %d) | %.4f s |\n", rounds, off_s);
  std::printf("| busy loop, sampler on at 100 ms (median of %d, %zu samples) | %.4f s |\n", rounds, samples, on_s);
  std::printf("| sampler cost on the busy loop | %+.2f %% |\n", 100.0 * (on_s - off_s) / off_s);
  std::printf("| per-step probe, /proc only (`gpu = false`) | %.1f us |\n", probe_cpu_us);
  std::printf("| per-step probe with the NVML cycle (`gpu = true`, library absent) | %.1f us |\n", probe_gpu_us);
  return 0;
}

}  // namespace
}  // namespace ddp

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 9;
  if (rounds < 1) {
    std::fprintf(stderr, "usage: monitor_bench [rounds >= 1]\n");
    return 2;
  }
  return ddp::run(rounds);
}
