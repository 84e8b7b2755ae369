// doctor.json's runs read back as the doctor's typed records: what predict works on.
#include "doctor/doctor_runs.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "train/config/option_json.h"

#include "doctor/doctor_result.h"
#include "train/records/run_summary.h"

namespace ddp {
namespace {

RunRecord measured(int devices, double wall) {
  RunRecord r;
  r.label = fmt::format("devices={}", devices);
  r.devices = devices;
  r.command = fmt::format("ddpscope train --devices {}", devices);
  r.epochs_run = 4;
  r.epochs_full = 200;
  r.extrapolated = true;
  r.ok = true;
  r.wall_seconds = wall;
  r.summary.world_size = devices;
  r.summary.wall_seconds = wall / 50;
  r.summary.config = typed_config({{"batch_size", "512"}, {"max_epochs", "4"}}, "the test's options");
  r.summary.host_load = {{.host = "node1", .cores = 2, .busy_core_seconds = 3.0, .ranks_cpu_seconds = 2.5}};
  return r;
}

TEST(DoctorRuns, ADoctorsRunsComeBackAsItsRecords) {
  DoctorResult result;
  result.runs.push_back(measured(1, 10.0));
  result.runs.push_back(measured(2, 6.5));
  RunRecord failed;
  failed.label = "devices=3";
  failed.devices = 3;
  failed.command = "ddpscope train --devices 3";
  failed.error = "ddpscope train exited 2: --num-nodes 1 but 3 hosts";
  result.runs.push_back(failed);

  const std::vector<RunRecord> runs = runs_of_doctor_json(nlohmann::json(to_json(result)));
  ASSERT_EQ(runs.size(), 3u);
  for (std::size_t i = 0; i < 2; ++i) {
    const RunRecord& want = result.runs[i];
    EXPECT_EQ(runs[i].label, want.label);
    EXPECT_EQ(runs[i].devices, want.devices);
    EXPECT_EQ(runs[i].command, want.command);
    EXPECT_EQ(runs[i].epochs_run, 4);
    EXPECT_EQ(runs[i].epochs_full, 200);
    EXPECT_TRUE(runs[i].extrapolated);
    EXPECT_TRUE(runs[i].ok);
    EXPECT_DOUBLE_EQ(runs[i].wall_seconds, want.wall_seconds);
    EXPECT_EQ(runs[i].summary, want.summary);
    EXPECT_EQ(runs[i].config.data.batch_size, 512) << "the configuration is the summary's, typed";
  }
  EXPECT_FALSE(runs[2].ok);
  EXPECT_EQ(runs[2].error, failed.error);
  EXPECT_EQ(runs[2].wall_seconds, 0) << "a failed run measured no wall";
}

TEST(DoctorRuns, WhatAFileLacksStaysUnmeasuredAndARunWithoutDevicesIsLeftOut) {
  const nlohmann::json doctor = {
      {"runs",
       {{{"devices", 2}},
        {{"label", "no devices"}, {"ok", true}},
        {{"devices", "2"}, {"ok", true}},
        {{"devices", 0}, {"ok", true}},
        {{"devices", 10000000000LL}, {"ok", true}},
        {{"devices", 18446744073709551615ULL}, {"ok", true}},
        "not a run",
        {{"devices", 3}, {"ok", true}, {"wall_seconds", "fast"}, {"summary", {{"wall_seconds", "slow"}}}}}}};
  const std::vector<RunRecord> runs = runs_of_doctor_json(doctor);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].label, "devices=2");
  EXPECT_FALSE(runs[0].ok);
  EXPECT_EQ(runs[1].devices, 3);
  EXPECT_TRUE(runs[1].ok);
  EXPECT_EQ(runs[1].wall_seconds, 0) << "a wall that is not a number is unmeasured";
  EXPECT_EQ(runs[1].summary, RunSummary{}) << "a summary this version cannot read is left empty";
  EXPECT_TRUE(runs_of_doctor_json(nlohmann::json::array()).empty());
  EXPECT_TRUE(runs_of_doctor_json({{"runs", "none"}}).empty());
}

}  // namespace
}  // namespace ddp
