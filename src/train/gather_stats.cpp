#include "train/gather_stats.h"

#include <type_traits>

#include "dist/gather.h"

namespace ddp {

std::vector<PhaseCalls> gather_run_stats(Communicator& comm, const PhaseClock& clock, const AllreduceStats& mine,
                                         RunSummary& stats) {
  const int world = comm.size();
  stats.phases_per_rank.assign(world, PhaseSeconds{});
  std::vector<PhaseCalls> phase_calls(world);
  for (std::size_t p = 0; p < kPhaseCount; ++p) {
    const std::vector<double> seconds = comm.allgather(clock.seconds()[p]);
    const std::vector<uint64_t> calls = comm.allgather(static_cast<uint64_t>(clock.calls()[p]));
    for (int r = 0; r < world; ++r) {
      stats.phases_per_rank[r][p] = seconds[r];
      phase_calls[r][p] = static_cast<int64_t>(calls[r]);
    }
  }
  stats.hosts.clear();
  const std::string host = comm.host_name();
  for (const auto& name : gather_at_rank_zero(comm, std::as_bytes(std::span(host)))) {
    stats.hosts.emplace_back(reinterpret_cast<const char*>(name.data()), name.size());
  }
  const std::vector<uint64_t> samples = comm.allgather(static_cast<uint64_t>(stats.train_samples));
  stats.train_samples = 0;
  for (uint64_t s : samples) stats.train_samples += static_cast<int64_t>(s);
  stats.allreduce_per_rank.assign(world, AllreduceStats{});
  auto gather_field = [&](auto field) {
    using Field = std::remove_reference_t<decltype(mine.*field)>;
    const std::vector<double> all = comm.allgather(static_cast<double>(mine.*field));
    for (int r = 0; r < world; ++r) stats.allreduce_per_rank[r].*field = static_cast<Field>(all[r]);
  };
  gather_field(&AllreduceStats::calls);
  gather_field(&AllreduceStats::bytes);
  gather_field(&AllreduceStats::seconds);
  gather_field(&AllreduceStats::in_flight_seconds);
  gather_field(&AllreduceStats::hidden_seconds);
  stats.allreduce = stats.allreduce_per_rank[0];
  return phase_calls;
}

void gather_thread_census(Communicator& comm, const ThreadCensus& mine, RunSummary& stats) {
  const std::vector<uint64_t> threads = comm.allgather(static_cast<uint64_t>(mine.threads));
  const std::vector<uint64_t> omp = comm.allgather(static_cast<uint64_t>(mine.omp_threads));
  const std::vector<uint64_t> blas = comm.allgather(static_cast<uint64_t>(mine.blas_threads));
  stats.threads_per_rank.clear();
  for (std::size_t r = 0; r < threads.size(); ++r) {
    stats.threads_per_rank.push_back(
        {static_cast<int>(threads[r]), static_cast<int>(omp[r]), static_cast<int>(blas[r])});
  }
}

}  // namespace ddp
