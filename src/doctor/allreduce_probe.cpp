#include "doctor/allreduce_probe.h"

#include <algorithm>
#include <chrono>

#include "ddpscope/buffer.h"

namespace ddp {

std::vector<ProbePoint> probe_allreduce(Communicator& comm, const std::vector<int64_t>& sizes, int repetitions) {
  std::vector<ProbePoint> points;
  for (const int64_t bytes : sizes) {
    Buffer data(static_cast<std::size_t>(std::max<int64_t>(1, bytes / 4)));
    std::vector<double> times;
    for (int rep = -3; rep < repetitions; ++rep) {  // three warm-up rounds
      comm.barrier();
      const auto start = std::chrono::steady_clock::now();
      comm.allreduce_sum(data.span());
      const double mine = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const std::vector<double> all = comm.allgather(mine);
      if (rep >= 0) times.push_back(*std::max_element(all.begin(), all.end()));
    }
    std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
    points.push_back({comm.size(), static_cast<int64_t>(data.size() * sizeof(float)), times[times.size() / 2]});
  }
  return points;
}

}  // namespace ddp
