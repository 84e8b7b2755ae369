#pragma once
// What a run measured: the content of summary.json (schema ddpscope.summary/1)
// as typed data. The trainer fills it and writes it; the doctor reads it back for its
// table, findings, model and report. from_json(to_json(s)) == s, and a summary.json read
// and written again is the same text.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ddpscope/option_enums.h"
#include "dist/grad_reducer.h"
#include "observe/arrival_lag.h"
#include "observe/phase.h"
#include "observe/sched_stats.h"
#include "observe/thread_census.h"
#include "train/config/run_config.h"
#include "train/records/epoch_spread.h"

namespace ddp {

using PhaseSeconds = std::array<double, kPhaseCount>;

// When the ranks arrived at the gradient collectives (observe/arrival_lag.h), over a run.
struct ArrivalSummary {
  int64_t collectives = 0;  // per rank, analysed
  int64_t steps = 0;        // the synchronising backwards they span (collectives / per step)
  int64_t dropped = 0;      // over all ranks: arrivals beyond the buffer, not analysed
  std::vector<RankArrival> per_rank;
  std::optional<Straggler> straggler;
  // Per rank: its mean lag behind the first arrival over a step's collectives (ms), per
  // step, averaged over consecutive steps into at most kArrivalChartPoints points.
  std::vector<std::vector<double>> lag_ms_per_rank;
};
inline constexpr std::size_t kArrivalChartPoints = 200;

// One host's cores over a run (observe/host_load.h): what they did, what its ranks took, and so
// what other processes took.
struct HostLoad {
  std::string host;
  int cores = 0;
  int ranks = 0;                      // the job's ranks that ran on it (0: from a summary before it)
  double busy_core_seconds = 0;       // every core's busy time from training's start to its end
  double ranks_cpu_seconds = 0;       // the ranks' own processes on it, every thread
  double interrupt_core_seconds = 0;  // of busy, the kernel's irq and softirq work (the job's network)
  // What other processes took: busy time that is neither the ranks' nor interrupt work.
  double others_core_seconds() const {
    const double others = busy_core_seconds - interrupt_core_seconds - ranks_cpu_seconds;
    return others > 0 ? others : 0.0;
  }
};
bool operator==(const HostLoad& a, const HostLoad& b);

// How the ranks averaged gradients: not at all (one rank), over MPI (CPU ranks, or GPU ranks
// through host memory), over NCCL (dist/grad_transport_choice.h); a traced job's (analyze) also
// over gloo, or unknown where its traces do not say.
enum class GradientTransport { kNone, kMpi, kNccl, kGloo, kUnknown };
constexpr std::array<Spelling<GradientTransport>, 5> spellings(GradientTransport) {
  return {{{GradientTransport::kNone, "none"},
           {GradientTransport::kMpi, "mpi"},
           {GradientTransport::kNccl, "nccl"},
           {GradientTransport::kGloo, "gloo"},
           {GradientTransport::kUnknown, "unknown"}}};
}

struct RunSummary {
  std::string version = DDPSCOPE_VERSION;
  // The run's configuration, from the options the Trainer was given (parsed once, through the
  // option table, where they come in: as a Trainer's hparams, or from a file's "config");
  // nullopt for a Trainer given none (a library user's), whose summary.json "config" is {}.
  std::optional<Config> config;
  Accelerator accelerator = Accelerator::kCpu;  // what ran: cpu or cuda, never auto
  Strategy strategy = Strategy::kSingle;        // what ran: single, ddp or ddp_zero1
  GradientTransport gradient_transport = GradientTransport::kNone;
  int world_size = 1;
  std::vector<std::string> hosts;  // every rank's host name, indexed by rank
  int64_t epochs = 0;              // completed
  // Since the start, at the end of the first and of the last completed epoch: what the
  // doctor needs to extrapolate from steady epochs (a list would grow with the run).
  double first_epoch_end_seconds = 0;
  double last_epoch_end_seconds = 0;
  int64_t optimizer_steps = 0;      // the global step: a resumed run counts from its checkpoint's
  int64_t optimizer_steps_run = 0;  // by this process: what its throughput counts, as train_samples
  int64_t train_samples = 0;        // over all ranks
  double wall_seconds = 0;
  std::optional<double> final_train_loss;
  std::optional<double> final_val_loss;
  std::vector<PhaseSeconds> phases_per_rank;
  double training_flops_per_sample = 0;   // model GEMM FLOPs, forward and backward
  double gemm_peak_flops_per_second = 0;  // measured at the end of the run: this core's, or a GPU run's GPU's
  // Per rank: (seconds since the run started, device utilization %), at most a few hundred.
  std::vector<std::vector<std::pair<double, double>>> utilization_per_rank;
  AllreduceStats allreduce;  // rank zero's
  std::vector<AllreduceStats> allreduce_per_rank;

  // Which rank is slow, and why (filled by gather_sched_stats in train/gather_stats.h).
  // Each rank's compute thread from the start of training to its end, indexed by rank; empty
  // when some rank could not read /proc (the run still succeeds).
  std::vector<SchedDelta> sched_per_rank;
  std::vector<std::vector<int>> cores_per_rank;  // the cores each rank may run on (sched_getaffinity)
  // Per host, in the order of its first rank; empty when some rank could not read /proc/stat.
  // Left out of summary.json while empty.
  std::vector<HostLoad> host_load;
  // Filled by gather_arrivals (train/gather_arrivals.h); all zero and empty on one rank.
  ArrivalSummary arrivals;
  std::vector<std::string> warnings;  // what the run could not measure, in words

  // Catalogue, filled by Trainer::Run::finish through gather_thread_census: every
  // rank's threads and thread settings near the end of training, indexed by rank.
  // Empty when read from a summary.json written before it.
  std::vector<ThreadCensus> threads_per_rank;

  // Filled by the trainer at each epoch end, on rank zero (why: trainer.cpp): the run's own
  // noise for the doctor (run_with_epoch_spread). "steady_epochs" in the file, left out
  // while zero-count (fewer than 3 epochs).
  EpochSpread steady_epochs;

  double samples_per_second() const { return wall_seconds > 0 ? train_samples / wall_seconds : 0.0; }
  PhaseSeconds mean_phases() const;  // over ranks: summary.json's "phases"
  double mean_phase(Phase phase) const { return mean_phases()[static_cast<std::size_t>(phase)]; }
};

bool operator==(const RunSummary& a, const RunSummary& b);

// After a Trainer's fit(): the whole record (Trainer::stats() gives a library user its part).
class Trainer;
const RunSummary& run_summary(const Trainer& trainer);

nlohmann::ordered_json to_json(const RunSummary& summary);

// Throws DataError naming the first field that is missing or of the wrong type, and `where` it is
// ("summary.json", "doctor.json runs[1] summary"). Ordered, as "config" keeps the option table's
// order. from_json (what j.get<RunSummary>() calls) reads a summary.json.
RunSummary read_run_summary(const nlohmann::ordered_json& j, const std::string& where);
void from_json(const nlohmann::ordered_json& j, RunSummary& summary);

// The parts of a summary that a run read from traces also has (doctor.json writes them for it).
nlohmann::ordered_json phases_json(const PhaseSeconds& seconds);
PhaseSeconds read_phases(const nlohmann::ordered_json& j, const std::string& where);
nlohmann::ordered_json arrivals_json(const ArrivalSummary& arrivals);
ArrivalSummary read_arrivals(const nlohmann::ordered_json& j, const std::string& where);

}  // namespace ddp
