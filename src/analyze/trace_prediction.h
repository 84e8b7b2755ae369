#pragma once
// What the traced job's step would take on other device counts and links, from what the traces
// measured: the step runs at the pace of the slowest rank's measured compute (DDP keeps the
// per-device batch, and each rank keeps its speed), and the collectives of a step are priced as
// ring allreduces of their measured sizes (doctor/interconnect.h) on a named link, or, on the
// link the traces measured, as the measured transfer scaled by the ring's cost. The slowest
// rank's training thread is blocked on communication in proportion to its cost, as it was
// blocked per ms of transfer in the traces, so the traced point is the measured step.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ddp {

struct TraceAnalysis;  // analyze/trace_analysis.h

struct TraceLink {
  std::string name;  // "measured" or a preset's name
  double alpha_seconds = 0;
  double beta_bytes_per_second = 0;
};

struct TracePredictionRow {
  int devices = 1;
  std::string link;
  double step_ms = 0;
  double comm_ms = 0;     // the step's collectives on this link
  double throughput = 0;  // samples per second relative to one device: N * step(1) / step(N)
  // Half-width, as a share of step_ms: the traced steps' own spread (at least the doctor's
  // floor), widened as predict's band is for every e-fold of devices from the traced world;
  // NaN where one step was traced (no spread to take).
  double band = 0;
};

// One traced job of the training, at its device count: what the prediction's compute is fitted
// to when traces at other device counts are given (analyze --scaling-from).
struct TracedScale {
  std::string label;      // how the user named it (--scaling-from's path), or "the traces analysed"
  int devices = 1;        // the job's world size
  double compute_ms = 0;  // the slowest rank's step without its communication waits
  double spread = 0;      // its steps' largest relative standard deviation; NaN with one step
  bool on_gpu = false;
  std::string backend;                  // where the traces say
  double gradient_bytes_per_step = -1;  // DDP's gradient collectives, rank 0's; -1 unknown
};

struct TracePrediction {
  // The slowest rank's step without waiting for communication: on one device where fitted
  // across traced jobs, else as the one job measured it (each rank keeps its speed).
  double compute_ms = 0;
  // Fitted across the jobs: compute(N) = compute_ms * (1 + contention * (N - 1)), ranks of one
  // machine slowing each other (the doctor's compute_contention); 0 with one job.
  double contention = 0;
  std::vector<int> fitted_devices;  // the device counts fitted, with two or more jobs
  // The slowest rank's training thread blocked on communication per ms of the collectives'
  // measured transfer: below 1 where compute hides some of it, above 1 where waiting for the
  // others and the collectives' own overhead add to it; 1 (none hidden) where unmatched.
  double blocked_per_transfer = 1;
  double collectives_per_step = 0;  // rank 0's, mean over its steps
  double bytes_per_step = -1;       // their sizes summed, mean over the steps; -1 unknown
  std::vector<TraceLink> links;
  std::vector<TracePredictionRow> rows;
  std::vector<std::string> unknown;  // numbers the traces lack, in words
  std::vector<std::string> notes;    // what the fit across jobs found wrong with them
};

TracedScale traced_scale(const TraceAnalysis& analysis, const std::string& label = "the traces analysed");

// nullopt (with the reason in `why`) when the traces cannot price a step's communication.
// `others`: the same training traced at other device counts, to fit the compute's growth;
// UsageError where one is plainly another training (another accelerator, backend or model).
std::optional<TracePrediction> predict_from_traces(const TraceAnalysis& analysis, std::string& why,
                                                   const std::vector<TracedScale>& others = {});

}  // namespace ddp
