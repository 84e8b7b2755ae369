#pragma once
// compare and doctor, as a pipeline: plan the runs (the configuration at each
// device count, then, for doctor, the ablations); run them; probe the allreduce and fit the
// scaling model; predict and find the problems, into a DoctorResult (doctor_result.h); then
// write compare.json or doctor.json and report.html into the doctor's own run folder and print.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ddpscope/config.h"
#include "doctor/doctor_result.h"
#include "train/config/run_config.h"

namespace ddp {

struct DoctorRequest {
  Config config;                   // the resolved base configuration
  std::vector<int> devices;        // increasing, distinct, >= 1
  bool ablations = false;          // doctor: true; compare: false
  std::filesystem::path dir;       // this doctor's own folder; runs go to dir/runs/<label>
  std::vector<std::string> notes;  // shown in the report (what was run, and why)
  std::string command;             // the command that ran this doctor
  // Epochs of each ablation run: chosen so a run takes about this long, then extrapolated.
  double ablation_seconds = 0.6;
  // Runs of each ablation's baseline (>= 1): with 2 or more its Sample is from the repeats'
  // walls (noise.h summarize), start-up included, instead of its own epochs' spread.
  int repeats = 1;
};

// Plans, runs and fits; prints the runs' progress to out.
DoctorResult diagnose(const DoctorRequest& request, std::FILE* out);

// diagnose, then writes its files and prints its results to out. Returns the doctor.json
// (compare.json without ablations) object it wrote; an Error (exit 1) when any run failed.
nlohmann::ordered_json run_doctor(const DoctorRequest& request, std::FILE* out);

}  // namespace ddp
