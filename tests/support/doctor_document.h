#pragma once
// A doctor.json as `ddpscope doctor` writes it (doctor_json.cpp's writer over a DoctorResult),
// from the few things a test varies: its configuration, its runs' walls and the measured
// prediction rows' errors. Tests then change single fields of it as a file would have them.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "doctor/doctor_result.h"
#include "train/config/option_json.h"

namespace ddp::testing {

struct StudyRun {
  int devices = 1;
  double wall_seconds = 10;
  RunSummary summary;  // its world size, wall and config are set from the study's
};

// A measured prediction row: the model's error there (predicted / measured - 1).
struct StudyRow {
  std::string label;
  int devices = 1;
  double measured_wall_seconds = 10;
  double error = 0;
  int64_t hidden_size = 0;  // 0: the configuration's
  bool modelled = true;
};

inline nlohmann::json doctor_document(const OptionTexts& options, const std::vector<StudyRun>& runs,
                                      const std::vector<StudyRow>& rows, const ModelParameters& model) {
  DoctorResult result;
  result.ablations_run = true;
  result.config = typed_config(options, "the test's config");
  result.command = "ddpscope doctor";
  for (const StudyRun& r : runs) {
    RunRecord run;
    run.label = "devices=" + std::to_string(r.devices);
    run.devices = r.devices;
    run.command = "ddpscope train --devices " + std::to_string(r.devices);
    run.ok = true;
    run.wall_seconds = r.wall_seconds;
    run.config = result.config;
    run.summary = r.summary;
    run.summary.config = result.config;
    run.summary.world_size = r.devices;
    run.summary.wall_seconds = r.wall_seconds;
    result.runs.push_back(std::move(run));
  }
  for (const StudyRow& r : rows) {
    PredictionRow row;
    row.label = r.label;
    row.workload = workload_for(result.config, r.devices);
    if (r.hidden_size > 0) row.workload.hidden_size = r.hidden_size;
    row.measured_wall_seconds = r.measured_wall_seconds;
    row.predicted_wall_seconds = r.measured_wall_seconds * (1 + r.error);
    row.modelled = r.modelled;
    result.predictions.push_back(row);
  }
  result.model = model;
  return nlohmann::json(to_json(result));
}

}  // namespace ddp::testing
