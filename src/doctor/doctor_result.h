#pragma once
// What a compare, a doctor or an analysis of traces found, as plain data: the runs, the
// ablations, the probe, the fitted model, the predictions and the findings. doctor.cpp computes
// it from the engine's runs, analyze (analyze/trace_analysis.h) from a user's traces; doctor.json,
// the text and report.html are each a function of it, whichever source it has.
#include <array>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ddpscope/config.h"
#include "doctor/findings.h"
#include "doctor/run_record.h"
#include "doctor/scaling_model.h"
#include "doctor/size_speedup.h"
#include "doctor/workload_counts.h"
#include "train/config/run_config.h"

namespace ddp {

// One prediction of the model: for a measured run (its label, and its ablation's name when it
// is one), or for another device count and link (no label, nothing measured).
struct PredictionRow {
  std::optional<std::string> label;
  std::optional<std::string> ablation;
  WorkloadConfig workload;
  double predicted_wall_seconds = 0;
  double predicted_speedup = 0;
  std::optional<double> measured_wall_seconds;  // the run's, when it ran and succeeded
  // False for an ablation whose change the model does not see (its workload is its baseline's,
  // such as loader workers): the difference from its measured time is the ablation's effect,
  // not the model's error, and no band counts it.
  bool modelled = true;
  // Not measured: the half-width of its band, relative (doctor/prediction_band.h, plus the
  // share of the cores other processes took during the runs, doctor/busy_machine.h).
  std::optional<double> band;
  // Priced per step, not per run: a prediction from traces, which know a step's time but not the
  // run's configuration (its workload holds the devices and the link only).
  bool per_step = false;
  std::optional<double> error() const;  // (predicted - measured) / measured
};

// Where a result's runs were measured: by the engine's own runs (doctor, compare), or read from a
// user's traces (analyze), which hold each rank's step parts and collectives and none of what
// kNotInTraces names.
enum class RunSource { kEngine, kTraces };

// What a traced run cannot say, as the text, doctor.json and report.html name it.
inline constexpr std::array<const char*, 4> kNotInTraces = {
    "the configuration (batch size, model, epochs)", "device utilization samples",
    "start-up (the profiler's window opens after it)", "other processes' load on the hosts"};

struct DoctorResult {
  RunSource source = RunSource::kEngine;
  bool ablations_run = false;  // doctor: true; compare: false
  Config config;               // the base configuration (the engine's runs)
  OptionTexts setup;           // traces: what they tell of the job, in place of a configuration
  std::vector<std::string> notes;
  std::string command;                     // the command that ran this doctor
  std::vector<RunRecord> runs;             // by increasing devices
  std::vector<AblationResult> ablations;   // each points at its baseline in `runs`
  std::vector<SizeSpeedup> size_speedups;  // the size ablations as N devices against one
  AllreduceFit allreduce;                  // rows empty without a probe
  std::optional<ModelParameters> model;
  std::vector<PredictionRow> predictions;
  std::vector<Finding> findings;

  DoctorResult() = default;
  // Ablations point into `runs`: moving keeps the runs where they are, a copy would not.
  DoctorResult(DoctorResult&&) = default;
  DoctorResult& operator=(DoctorResult&&) = default;
  DoctorResult(const DoctorResult&) = delete;
  DoctorResult& operator=(const DoctorResult&) = delete;

  const RunRecord* run_at(int devices) const;
  // The 1-device run's throughput over this run's: the engine's runs train the same epochs, so
  // their walls; traced runs the same per-device batch, so N times their steps' ratio.
  std::optional<double> speedup(const RunRecord& run) const;
};

// doctor.json (schema ddpscope.doctor/1), or compare.json (ddpscope.compare/1) without ablations.
nlohmann::ordered_json to_json(const DoctorResult& result);

// The terminal's version: the compare table, the ablations, the model and its predictions,
// the findings and the notes.
void print(const DoctorResult& result, std::FILE* out);

// The findings and the notes as print() writes them, for every result's text (analyze's too).
std::string findings_text(const std::vector<Finding>& findings);
std::string notes_text(const std::vector<std::string>& notes);

}  // namespace ddp
