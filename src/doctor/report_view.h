#pragma once
// What report.html shows, as plain data: build_report_view makes it from a DoctorResult (a
// doctor's or compare's runs, or a traced job's), and render_report_html (report_html.h) only
// formats it. A number the result does not have is NaN here, a text empty.

#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ddpscope/config.h"
#include "observe/phase.h"

namespace ddp {

// (x, y) in data units: (devices, speedup) or (seconds, percent).
using ReportPoints = std::vector<std::pair<double, double>>;

// One device's utilization samples, in the order recorded.
struct DeviceUtilization {
  int device = 0;
  ReportPoints points;     // (seconds since start, percent)
  std::vector<int> cores;  // the cores its rank could run on (summary.json cores_per_rank); empty where unknown
};

// One run of the study: a row of the runs table, a bar of the phase chart, a utilization chart.
struct ReportRun {
  std::string label;  // the run's own, else "devices=N"
  int devices = 0;
  double wall_seconds = 0;  // NaN where unknown, as every number below
  double speedup = 0;       // the doctor's where stated, else wall(1 device) / wall
  double samples_per_second = 0;
  double optimizer_steps = 0;
  std::optional<std::array<double, kPhaseCount>> phase_seconds;  // by kPhaseNames, negatives as 0
  std::vector<DeviceUtilization> utilization;
  double monitor_interval_ms = 0;
  bool per_step_probe = false;  // monitor_mode "per-step": read inside the training step
  std::string command;
  // Per rank: (step, mean lag behind the first arrival at its gradient collectives, ms),
  // from summary.json's arrivals; empty on one device.
  std::vector<ReportPoints> arrival_lag_ms;
  int straggler_rank = -1;  // the summary's arrival straggler, -1 for none
  // A traced job of more ranks than its rows show (ranks_shown.h): every rank's step, for one
  // chart; (rank, ms per step), by rank. Empty otherwise.
  std::vector<std::pair<int, double>> step_ms_per_rank;
  std::vector<int> shown_ranks;  // the ranks with rows, where step_ms_per_rank is set
};

// A predicted speedup curve at the configuration's own shape, for one interconnect.
struct SpeedupCurve {
  std::string interconnect;  // "measured" is this machine's fitted link
  ReportPoints points;       // (devices, speedup), by devices, starting at (1, 1)
};

struct AblationRow {
  std::string name;
  double devices = 0;
  std::string error;  // non-empty: the ablation failed and has no numbers
  double wall_seconds = 0;
  double baseline_wall_seconds = 0;
  double change = 0;  // (wall - baseline) / baseline
  double epochs_run = 0;
  bool extrapolated = false;
  double cost_seconds_per_step = 0;
  // Its effect against the baseline (doctor.json "effect"; run_noise.h), NaN/empty where absent.
  double effect = 0;              // relative: +0.123 is 12.3 % slower
  double effect_uncertainty = 0;  // half-width of its 95 % band; NaN: noise unknown
  bool measurable = false;
  std::string effect_text;   // describe()'s: "no measurable effect (±2.1 %)"
  double baseline_band = 0;  // the baseline's own ±, relative: the band around zero
};

// A size the seed's author tried, as N devices against one (doctor.json "size_speedups").
struct SizeSpeedupRow {
  std::string name;
  double devices = 0;
  std::string error;  // non-empty: no numbers
  double one_device_wall_seconds = 0;
  double wall_seconds = 0;
  double speedup = 0;
  double baseline_speedup = 0;
  double samples_per_second = 0;
};

struct FindingView {
  std::string title;
  double cost_seconds = 0;
  double share_of_wall = 0;
  std::string detail;
  std::string fix;
  std::vector<std::string> evidence;
};

// A fitted model parameter: a number to scale into its unit, or the text it was written as.
struct ModelValue {
  std::string key;
  std::optional<double> number;
  std::string text;  // when not a number
};

struct PredictionView {
  std::string label;         // "—" for a device count that was not measured
  std::string interconnect;  // "—" where absent
  double devices = 0;
  double batch_size = 0;
  double hidden_size = 0;
  double hidden_layers = 0;  // NaN unless some prediction varied depth
  double predicted_wall_seconds = 0;
  double band = 0;  // relative half-width; NaN where the row has none (measured rows, older files)
  double measured_wall_seconds = 0;
  double error = 0;
  bool modelled = true;  // false: an ablation the model does not see; its error is the ablation's effect
};

// The largest run against one device, when both ran: the page's question and verdict.
struct HeadlineSpeedup {
  int devices = 0;
  double speedup = 0;
};

// kAnalyze: a result read from a user's traces, one run per rank of each traced job.
enum class ReportKind { kDoctor, kCompare, kAnalyze };

struct ReportView {
  ReportKind kind = ReportKind::kCompare;
  std::string schema;   // as written, "—" where absent
  std::string version;  // the ddpscope that wrote the document
  bool seed_preset = false;
  std::optional<HeadlineSpeedup> headline;
  std::vector<std::string> notes;  // the doctor's, after one of our own when fewer devices ran
  OptionTexts config;              // option, value as typed; the document's order
  std::vector<ReportRun> runs;
  ReportPoints measured_speedups;                     // (devices, speedup) of the runs, by devices
  std::vector<SpeedupCurve> predicted_speedups;       // in the order the predictions name them
  std::optional<std::vector<AblationRow>> ablations;  // absent in compare.json; sizes apart
  std::vector<SizeSpeedupRow> sizes;
  std::optional<std::vector<FindingView>> findings;  // absent in compare.json
  std::vector<ModelValue> model;
  std::vector<PredictionView> predictions;
  std::vector<std::string> commands;
  std::vector<std::string> not_in_traces;  // a traced result's: what its traces cannot say
};

struct DoctorResult;  // doctor/doctor_result.h

ReportView build_report_view(const DoctorResult& result);

}  // namespace ddp
