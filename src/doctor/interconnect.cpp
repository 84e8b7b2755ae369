#include "doctor/interconnect.h"

#include <fmt/format.h>

#include "ddpscope/error.h"

namespace ddp {

const std::vector<Interconnect>& interconnect_presets() {
  // Each alpha and beta, its source and the arithmetic: docs/interconnects.md.
  static const std::vector<Interconnect> kPresets = {
      {"shared-memory", 0.405e-6, 7.95e9,
       "this machine, Open MPI over shared memory (docs/performance.md: 0.81 us at 4-64 B, 7.95 GB/s busbw at 538,628 "
       "B)"},
      {"nvlink", 2.0e-6, 370e9,
       "NVLink 4 / NVSwitch, H100 SXM (450 GB/s per direction peak; 370 GB/s NCCL ring measured; ~2 us per LL128 hop)"},
      {"pcie", 3.1e-6, 25e9,
       "PCIe 4.0 x16 between GPUs (31.5 GB/s per direction raw, 25 GB/s effective; 6.2 us 2-GPU NCCL)"},
      {"infiniband", 3.0e-6, 24e9,
       "InfiniBand HDR 200 Gb/s, one NIC per GPU (25 GB/s raw, 24 GB/s effective; ~3 us per step)"},
      {"10gbe", 40e-6, 1.1e9,
       "10 Gigabit Ethernet, TCP sockets (1.25 GB/s line rate, 1.1 GB/s effective; ~40 us per step)"},
  };
  return kPresets;
}

const Interconnect& find_interconnect(std::string_view name) {
  std::string names;
  for (const Interconnect& preset : interconnect_presets()) {
    if (preset.name == name) return preset;
    names += (names.empty() ? "" : ", ") + preset.name;
  }
  throw UsageError(fmt::format("--interconnect: '{}' is not accepted; expected measured, {}", name, names));
}

double ring_allreduce_seconds(int ranks, double bytes, double alpha_seconds, double beta_bytes_per_second) {
  if (ranks < 2) return 0.0;
  const double steps = 2.0 * (ranks - 1);
  const double transfer = beta_bytes_per_second > 0 ? steps / ranks * bytes / beta_bytes_per_second : 0.0;
  return steps * alpha_seconds + transfer;
}

double algbw(double bytes, double seconds) { return seconds > 0 ? bytes / seconds : 0.0; }

double busbw(int ranks, double bytes, double seconds) { return algbw(bytes, seconds) * 2.0 * (ranks - 1) / ranks; }

}  // namespace ddp
