#pragma once
// The allreduce cost model and the links it runs on. A ring allreduce of n bytes over N
// ranks takes 2(N-1) steps, each moving n/N bytes per rank (nccl-tests, doc/PERFORMANCE.md):
//
//   T(N, n) = 2(N-1) * alpha + 2(N-1)/N * n / beta
//
// alpha: seconds per ring step (latency: launch, synchronisation, one hop);
// beta:  bytes per second one rank moves over its link, comparable with nccl-tests' busbw.
// Presets and their sources: docs/interconnects.md.
#include <string>
#include <string_view>
#include <vector>

namespace ddp {

struct Interconnect {
  std::string name;
  double alpha_seconds = 0;
  double beta_bytes_per_second = 0;
  std::string description;  // what link, and where the numbers come from (one line)
};

// shared-memory, nvlink, pcie, infiniband, 10gbe (docs/interconnects.md).
const std::vector<Interconnect>& interconnect_presets();

// The preset of that name; UsageError listing the names when there is none.
const Interconnect& find_interconnect(std::string_view name);

// T(N, n) above; 0 for one rank (nothing to reduce); beta 0: no bandwidth term (not measured).
double ring_allreduce_seconds(int ranks, double bytes, double alpha_seconds, double beta_bytes_per_second);

// nccl-tests' definitions: algbw = n / t, busbw = algbw * 2(N-1)/N.
double algbw(double bytes, double seconds);
double busbw(int ranks, double bytes, double seconds);

}  // namespace ddp
