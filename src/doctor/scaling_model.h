#pragma once
// The scaling model: every phase of a run's wall time as a price per unit of
// work, fitted by least squares to measured runs and used to predict other configurations.
//
// Work is counted by count_workload() (workload_counts.h); per rank (rank zero), with
// E epochs, V validations, M micro-batches and S samples per epoch, P parameters, Ft and Ff
// training and forward GEMM FLOPs per sample, the phases of summary.json are:
//
//   startup    = s1                    (+ s_launch when W > 1: mpirun, MPI init;
//                                       + kNcclStartupSeconds for W GPUs on a GPU link)
//   forward    = E * (M * a + S * Ft / R) * Ff/Ft   (the micro-batch compute, split by
//   backward   = E * (M * a + S * Ft / R) * (1 - Ff/Ft)   FLOP share; fitted as one sum)
//                a, the fixed seconds of a micro-batch: a_mb on a CPU; on a GPU K * a_k, its
//                K launches (WorkloadCounts::kernels_per_micro_batch) at a price each
//   data       = E * (M * d0 + S * d1)
//   comm_wait  = E * (syncs * T_sync + jitter * (M * a_mb + S * Ft / R))      (W > 1 only)
//                T_sync = sum over DDP's gradient buckets of the ring allreduce T(W, bytes)
//                (interconnect.h); jitter: the share of the compute between synchronisations
//                that ranks wait for the slowest one
//   optimizer  = E * steps * (o0 + o1 * P)
//   validation = V * (VB * a_val + VS * Ff / R_val)   (rank zero's VB batches, VS samples)
//   logging    = E * l0 + events * l1
//   monitor    = E * M * m              (only with the per-step probe)
//   with W > 1 ranks on this machine (interconnect "measured" or "shared-memory"), forward,
//   backward, data, optimizer and validation are multiplied by (1 + compute_contention *
//   (W - 1)) and monitor by (1 + monitor_contention * (W - 1)); devices behind another
//   interconnect each have their own cores and memory
//   other      = E * steps * h        (the host's time per step that no phase holds: on a GPU,
//                                       where the device waited for the host)
//              + L * e                 (a GPU run with --no-cuda-graph: its L launches,
//                                       WorkloadCounts::kernels, each from the host)
//   wall       = the sum of the phases.
//
// A rate of 0 (flops_per_second, val_flops_per_second, beta) means that no cost proportional
// to that work was measured: the term is 0.
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "doctor/workload_counts.h"
#include "observe/phase.h"

namespace ddp {

// What starting a NCCL communicator takes, about 0.17 s for one rank (NVIDIA/nccl#1646): a
// published figure, not fitted, added to a prediction of W > 1 GPUs on a link between GPUs
// (a preset: the measured runs of ranks sharing GPUs start no NCCL).
inline constexpr double kNcclStartupSeconds = 0.17;

// One measurement of the built-in allreduce probe: seconds per allreduce of `bytes` over `ranks`.
struct AllreducePoint {
  int ranks = 2;
  double bytes = 0;
  double seconds = 0;
};

struct AllreduceFit {
  double alpha_seconds = 0;          // per ring step
  double beta_bytes_per_second = 0;  // comparable with nccl-tests' busbw
  struct Row {                       // per point, for the report
    AllreducePoint point;
    double model_seconds = 0;
    double algbw_bytes_per_second = 0;  // bytes / measured seconds
    double busbw_bytes_per_second = 0;  // algbw * 2(N-1)/N
  };
  std::vector<Row> rows;
};

// alpha and 1/beta of T(N, n) = 2(N-1) alpha + 2(N-1)/N n / beta by least squares on the
// relative error (each point weighs 1/t^2, so microsecond latency points count as much as
// millisecond bandwidth points), both >= 0: one that comes out negative is set to 0 and the
// other refitted. Exact on points that follow the model. Points with one rank are skipped;
// DataError when no point has ranks >= 2 and seconds > 0.
AllreduceFit fit_allreduce(const std::vector<AllreducePoint>& points);
struct ProbePoint;  // doctor/allreduce_probe.h: the built-in probe's measurements
AllreduceFit fit_allreduce(const std::vector<ProbePoint>& points);

// The model's prices. JSON names (doctor.json "model") in the comments where they differ.
struct ModelParameters {
  double alpha_seconds = 0;                    // measured allreduce latency per ring step
  double beta_bytes_per_second = 0;            // measured allreduce bandwidth (busbw)
  double flops_per_second = 0;                 // R: effective GEMM rate of training
  double fixed_seconds_per_step = 0;           // a_mb: fixed forward+backward seconds per micro-batch
  double seconds_per_kernel = 0;               // a_k: the same on a GPU, per launch in a CUDA graph
  double eager_seconds_per_kernel = 0;         // e: what a launch from the host adds (--no-cuda-graph)
  double host_seconds_per_step = 0;            // h: "other" per optimizer step
  double fixed_seconds_per_epoch = 0;          // l0: logging per epoch (loggers' flush)
  double startup_seconds = 0;                  // s1
  double launch_seconds = 0;                   // s_launch, added when W > 1
  double val_flops_per_second = 0;             // R_val
  double val_fixed_seconds_per_batch = 0;      // a_val
  double data_seconds_per_micro_batch = 0;     // d0
  double data_seconds_per_sample = 0;          // d1
  double optimizer_seconds_per_step = 0;       // o0
  double optimizer_seconds_per_parameter = 0;  // o1, per step
  double logging_seconds_per_event = 0;        // l1, per log_every_n_steps event
  double monitor_seconds_per_micro_batch = 0;  // m, per-step probe
  double jitter_fraction = 0;                  // of the compute between synchronisations
  // Ranks on one machine slow each other down (shared caches and memory bandwidth; for the
  // per-step probe, the loader's and the file system's locks): per-rank work takes
  // (1 + contention * (W - 1)) times its 1-device time. Fitted from the multi-device runs
  // against the prices fitted on the 1-device runs; 0 without both kinds of runs.
  double compute_contention = 0;  // forward, backward, validation, data, optimizer
  double monitor_contention = 0;  // the per-step probe
};

using PhaseTimes = std::array<double, kPhaseCount>;  // indexed by Phase, names kPhaseNames

struct Prediction {
  WorkloadConfig config;
  WorkloadCounts counts;
  double alpha_seconds = 0;  // the link used: the model's ("measured") or a preset's
  double beta_bytes_per_second = 0;
  double allreduce_seconds_per_sync = 0;  // all buckets of one gradient sync
  PhaseTimes phases{};
  double wall_seconds = 0;             // sum of phases
  double one_device_wall_seconds = 0;  // the same configuration on 1 device
  double speedup = 1;                  // one_device_wall_seconds / wall_seconds
};

// The model's time for a configuration. UsageError for an unknown interconnect or a
// configuration out of range.
Prediction predict(const ModelParameters& model, const WorkloadConfig& config);

// DataError unless predict() gives a finite wall time > 0 for config, at its device count and
// on one device: a model whose prices overflow (1e308 s) or are all 0 predicts nothing.
void require_finite_prediction(const ModelParameters& model, const WorkloadConfig& config);

// Fits every price from runs' summaries (summary.json, typed), phases of rank zero,
// each run weighing 1/wall (relative residuals), every price kept >= 0. alpha and beta come
// from the allreduce probe. Where the runs cannot separate two prices:
// - one batch size and width (the per-micro-batch and per-FLOP columns proportional):
//   a_mb = 0, likewise a_val = 0, d0 = 0 and o0 = 0; logging events proportional to epochs:
//   l1 = 0;
// - no run validated: a_val = 0, R_val = R; no run with the per-step probe: m = 0;
// - no 1-device run: s1 = the multi-device runs' start-up, s_launch = 0; no multi-device run:
//   s_launch = 0, jitter = 0;
// - on a GPU, with runs in CUDA graphs, every price but e comes from those, and e from what
//   the eager runs (--no-cuda-graph) took beyond them per launch; with eager runs only, e = 0.
// DataError when the runs are of both a CPU and a GPU: their prices are different machines'.
// DataError when a summary has no phases, a time that is not finite, an option it cannot read,
// or counts (optimizer_steps, train_samples) other than the counted ones (a run stopped by
// max_steps cannot be priced per epoch).
ModelParameters fit_model(const std::vector<RunSummary>& summaries, const AllreduceFit& allreduce);

// The fixed seconds of one micro-batch's forward and backward: a_mb, or on a GPU K * a_k.
double fixed_seconds_per_micro_batch(const ModelParameters& model, const WorkloadConfig& config,
                                     const WorkloadCounts& counts);

// doctor.json's "model" block, and back. model_from_json throws DataError naming the field
// that is missing, not a number, negative or not finite; the GPU's prices (a_k, e, h), which
// older doctor.json files lack, are 0 when missing.
nlohmann::json to_json(const ModelParameters& model);
ModelParameters model_from_json(const nlohmann::json& model);

// predict()'s speedup of `devices` ranks over one when one size of `config` changes.
struct SweepPoint {
  int64_t value = 0;  // the per-device batch or the hidden width
  double speedup = 0;
};

// The speedup at each per-device batch (powers of two, 16..65536) or hidden width (16..8192),
// everything else as in config. UsageError when devices < 2.
std::vector<SweepPoint> batch_sweep(const ModelParameters& model, const WorkloadConfig& config, int devices);
std::vector<SweepPoint> width_sweep(const ModelParameters& model, const WorkloadConfig& config, int devices);

// The break-even of a sweep: the smallest value from which N devices beat one (speedup > 1)
// at it and at every larger value. The speedup need not grow with the size (fixed costs per
// step that N ranks share can make small batches win and large ones lose), so a value that
// wins with a loser above it is no break-even; nullopt when the largest value loses.
std::optional<int64_t> break_even(const std::vector<SweepPoint>& sweep);

// break_even of batch_sweep and width_sweep.
std::optional<int64_t> smallest_batch_where_n_beats_one(const ModelParameters& model, const WorkloadConfig& config,
                                                        int devices);
std::optional<int64_t> smallest_width_where_n_beats_one(const ModelParameters& model, const WorkloadConfig& config,
                                                        int devices);

}  // namespace ddp
