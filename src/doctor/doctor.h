#pragma once
// compare and doctor (DESIGN §5): run a configuration at each device count, then (doctor)
// the ablations; fit the scaling model; predict; find the problems; write compare.json or
// doctor.json and report.html into the doctor's own run folder.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/config.h"

namespace ddp {

struct DoctorRequest {
  Config config;             // the resolved base configuration
  std::vector<int> devices;  // increasing, distinct, >= 1
  bool ablations = false;    // doctor: true; compare: false
  std::filesystem::path dir;  // this doctor's own folder; runs go to dir/runs/<label>
  std::vector<std::string> notes;  // shown in the report (what was run, and why)
  std::string command;             // the command that ran this doctor
  // Epochs of each ablation run: chosen so a run takes about this long, then extrapolated.
  double ablation_seconds = 0.6;
};

// Returns the doctor.json (compare.json without ablations) object it also wrote; prints
// progress and the results to out.
nlohmann::ordered_json run_doctor(const DoctorRequest& request, std::FILE* out);

}  // namespace ddp
