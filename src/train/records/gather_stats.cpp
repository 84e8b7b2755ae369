#include "train/records/gather_stats.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "base/check.h"
#include "ddpscope/error.h"
#include "dist/gather.h"
#include "observe/cpu_usage.h"
#include "observe/host_load.h"

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

namespace {

// A SchedDelta as plain numbers for the byte gather; a NaN run time marks "no snapshot",
// a NaN steal "steal unknown".
using SchedWire = std::array<double, 6>;

SchedWire to_wire(const std::optional<SchedDelta>& d) {
  constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  if (!d) return {kNone, 0, 0, 0, 0, 0};
  return {d->run_seconds,
          d->wait_seconds,
          d->wait_share,
          static_cast<double>(d->voluntary_switches),
          static_cast<double>(d->involuntary_switches),
          d->steal_seconds.value_or(kNone)};
}

std::optional<SchedDelta> from_wire(const SchedWire& w) {
  if (std::isnan(w[0])) return std::nullopt;
  SchedDelta d{.run_seconds = w[0],
               .wait_seconds = w[1],
               .wait_share = w[2],
               .voluntary_switches = static_cast<uint64_t>(w[3]),
               .involuntary_switches = static_cast<uint64_t>(w[4]),
               .steal_seconds = std::isnan(w[5]) ? std::nullopt : std::optional<double>(w[5])};
  return d;
}

}  // namespace

void gather_sched_stats(Communicator& comm, const std::optional<SchedSnapshot>& start, RunSummary& stats) {
  std::optional<SchedDelta> mine;
  if (start) {
    const std::optional<SchedSnapshot> end = take_sched_snapshot(start->tid);
    if (end) mine = delta(*start, *end);
  }
  const SchedWire wire = to_wire(mine);
  const std::vector<std::vector<std::byte>> sched = gather_at_rank_zero(comm, std::as_bytes(std::span(wire)));
  const std::vector<int> cores = affinity_cores();
  const std::vector<std::vector<std::byte>> cores_parts = gather_at_rank_zero(comm, std::as_bytes(std::span(cores)));

  stats.sched_per_rank.clear();
  stats.cores_per_rank.clear();
  for (const auto& part : cores_parts) {
    std::vector<int>& rank = stats.cores_per_rank.emplace_back(part.size() / sizeof(int));
    std::memcpy(rank.data(), part.data(), rank.size() * sizeof(int));
  }
  for (const auto& part : sched) {
    SchedWire w{};
    DDP_CHECK_EQ(part.size(), sizeof(w));
    std::memcpy(w.data(), part.data(), sizeof(w));
    const std::optional<SchedDelta> d = from_wire(w);
    if (!d) {
      stats.sched_per_rank.clear();  // a list with holes would misindex ranks
      return;
    }
    stats.sched_per_rank.push_back(*d);
  }
}

void gather_host_load(Communicator& comm, const std::optional<HostLoadSnapshot>& start, RunSummary& stats) {
  constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  // host busy core-seconds, own CPU seconds, cores, host interrupt core-seconds
  std::array<double, 4> wire{kNone, kNone, 0, 0};
  if (start) {
    if (const std::optional<HostLoadSnapshot> end = take_host_load_snapshot()) {
      wire = {end->busy_core_seconds - start->busy_core_seconds, end->process_cpu_seconds - start->process_cpu_seconds,
              static_cast<double>(end->cores), end->interrupt_core_seconds - start->interrupt_core_seconds};
    }
  }
  const std::vector<std::vector<std::byte>> parts = gather_at_rank_zero(comm, std::as_bytes(std::span(wire)));
  const std::string boot_id = kernel_boot_id();
  const std::vector<std::vector<std::byte>> boot_ids = gather_at_rank_zero(comm, std::as_bytes(std::span(boot_id)));
  stats.host_load.clear();
  if (parts.empty()) return;
  std::vector<std::string> machines;            // per entry of host_load: its kernel's boot id, else its host name
  std::vector<std::vector<std::string>> names;  // per entry: its ranks' host names
  for (std::size_t r = 0; r < parts.size(); ++r) {
    DDP_CHECK_EQ(parts[r].size(), sizeof(wire));
    std::memcpy(wire.data(), parts[r].data(), sizeof(wire));
    if (std::isnan(wire[0]) || r >= stats.hosts.size()) {
      stats.host_load.clear();  // a host without its busy time would understate what others took
      return;
    }
    const std::string& host = stats.hosts[r];
    const std::string machine =
        boot_ids[r].empty() ? "host " + host
                            : std::string(reinterpret_cast<const char*>(boot_ids[r].data()), boot_ids[r].size());
    const auto at = std::find(machines.begin(), machines.end(), machine);
    const std::size_t i = static_cast<std::size_t>(at - machines.begin());
    if (at == machines.end()) {
      machines.push_back(machine);
      names.emplace_back();
      stats.host_load.emplace_back();
    }
    HostLoad& load = stats.host_load[i];
    // Host names of one kernel (the local cluster's namespaces) count their ranks together.
    if (std::find(names[i].begin(), names[i].end(), host) == names[i].end()) {
      load.host += (names[i].empty() ? "" : " and ") + host;
      names[i].push_back(host);
    }
    // The ranks of one machine read its counters moments apart: the largest reading covers them all.
    load.busy_core_seconds = std::max(load.busy_core_seconds, wire[0]);
    load.interrupt_core_seconds = std::max(load.interrupt_core_seconds, wire[3]);
    load.ranks_cpu_seconds += wire[1];
    load.cores = static_cast<int>(wire[2]);
    ++load.ranks;
  }
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
