// What the seed's per-step probe costs through ddpscope's own NVML code: one
// cycle is NvmlSession::open (nvmlInit, count; the library is loaded once per process, as
// pynvml loads it), a read of every GPU, and close (nvmlShutdown), as `--monitor-mode
// per-step` does every training step. For comparison, a read alone on a session kept open
// (what the background monitor pays).
//
//   build/release/bench/nvml_cycle_bench [calls]     # default 200
//
// Prints one JSON line (bench/gpu/check.sh reads it). Exit 0; 3 when NVML cannot be opened
// (no NVIDIA driver), with the reason on stderr; 2 for a bad argument.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "observe/nvml_probe.h"

namespace ddp {
namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

// Microseconds of each of `calls` calls; false when a call failed (its reason in why_not).
template <typename Function>
bool time_calls(int calls, std::vector<double>& microseconds, std::string& why_not, Function&& function) {
  for (int i = 0; i < calls; ++i) {
    const Clock::time_point start = Clock::now();
    const bool ok = function();
    microseconds.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    if (!ok) {
      why_not = "call " + std::to_string(i) + ": " + why_not;
      return false;
    }
  }
  return true;
}

bool read_all(const NvmlSession& session, std::string& why_not) {
  for (unsigned int index = 0; index < session.device_count(); ++index) {
    if (!session.read(index, &why_not)) return false;
  }
  return true;
}

int run(int calls) {
  std::string why_not;
  NvmlSession kept = NvmlSession::open(kNvmlLibrary, &why_not);
  if (!kept.is_open()) {
    std::fprintf(stderr, "nvml_cycle_bench: NVML unavailable: %s\n", why_not.c_str());
    return 3;
  }
  const unsigned int devices = kept.device_count();
  std::vector<double> cycle_us, read_us;
  const bool cycles_ok = time_calls(calls, cycle_us, why_not, [&] {
    NvmlSession session = NvmlSession::open(kNvmlLibrary, &why_not);
    return session.is_open() && read_all(session, why_not);  // the destructor shuts NVML down
  });
  const bool reads_ok = cycles_ok && time_calls(calls, read_us, why_not, [&] { return read_all(kept, why_not); });
  if (!reads_ok) {
    std::fprintf(stderr, "nvml_cycle_bench: NVML failed: %s\n", why_not.c_str());
    return 1;
  }
  std::printf(
      "{\"calls\": %d, \"devices\": %u, \"cycle_us_median\": %.2f, \"cycle_us_min\": %.2f, "
      "\"read_only_us_median\": %.3f}\n",
      calls, devices, median(cycle_us), *std::min_element(cycle_us.begin(), cycle_us.end()), median(read_us));
  return 0;
}

}  // namespace
}  // namespace ddp

int main(int argc, char** argv) {
  const int calls = argc > 1 ? std::atoi(argv[1]) : 200;
  if (calls < 1) {
    std::fprintf(stderr, "usage: nvml_cycle_bench [calls >= 1]\n");
    return 2;
  }
  return ddp::run(calls);
}
