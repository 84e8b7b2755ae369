// doctor.json read back as the DoctorResult it was written from: what predict works on.
#include "doctor/doctor_file.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "ddpscope/error.h"
#include "train/config/option_json.h"
#include "train/config/options.h"
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

Finding finding() {
  Finding f;
  f.title = "2 devices are slower than one";
  f.detail = "the detail";
  f.cost_seconds = 1.25;
  f.share_of_wall = 0.2;
  f.evidence = {"devices=1", "devices=2"};
  f.fix = "the fix";
  f.cost_uncertainty_seconds = 0.1;
  return f;
}

// What doctor.json holds comes back as the DoctorResult it was written from: its runs (a failed
// one too), ablations, predictions, findings, model and notes.
TEST(DoctorFile, ADoctorsResultComesBackAsItWasWritten) {
  DoctorResult result;
  result.ablations_run = true;
  result.config = typed_config({{"batch_size", "512"}}, "config");
  result.notes = {"a note"};
  result.command = "ddpscope doctor --devices 1,2";
  result.runs.push_back(measured(1, 10.0));
  result.runs.push_back(measured(2, 6.5));
  RunRecord failed;
  failed.label = "devices=3";
  failed.devices = 3;
  failed.command = "ddpscope train --devices 3";
  failed.error = "ddpscope train exited 2: --num-nodes 1 but 3 hosts";
  result.runs.push_back(failed);
  AblationResult a;
  a.name = "monitor=background";
  a.run = measured(2, 5.5);
  a.run.label = "devices=2 monitor=background";
  a.baseline = &result.runs[1];
  result.ablations.push_back(std::move(a));
  PredictionRow row;
  row.label = "devices=2";
  row.workload = workload_for(result.config, 2);
  row.predicted_wall_seconds = 6.0;
  row.predicted_speedup = 1.6;
  row.measured_wall_seconds = 6.5;
  result.predictions.push_back(row);
  row.label.reset();
  row.measured_wall_seconds.reset();
  row.workload.devices = 8;
  row.workload.interconnect = "nvlink";
  row.band = 0.4;
  result.predictions.push_back(row);
  result.findings = {finding()};
  ModelParameters model;
  model.flops_per_second = 1e10;
  model.alpha_seconds = 1e-6;
  result.model = model;

  const DoctorResult back = read_doctor_result(to_json(result), "doctor.json");
  EXPECT_TRUE(back.ablations_run);
  EXPECT_EQ(resolved_options(back.config), resolved_options(result.config));
  EXPECT_EQ(back.notes, result.notes);
  EXPECT_EQ(back.command, result.command);
  ASSERT_EQ(back.runs.size(), 3u);
  for (std::size_t i = 0; i < 2; ++i) {
    const RunRecord& want = result.runs[i];
    EXPECT_EQ(back.runs[i].label, want.label);
    EXPECT_EQ(back.runs[i].devices, want.devices);
    EXPECT_EQ(back.runs[i].command, want.command);
    EXPECT_EQ(back.runs[i].epochs_run, 4);
    EXPECT_EQ(back.runs[i].epochs_full, 200);
    EXPECT_TRUE(back.runs[i].extrapolated);
    EXPECT_TRUE(back.runs[i].ok);
    EXPECT_DOUBLE_EQ(back.runs[i].wall_seconds, want.wall_seconds);
    EXPECT_EQ(back.runs[i].summary, want.summary);
    EXPECT_EQ(back.runs[i].config.data.batch_size, 512) << "the configuration is the summary's, typed";
  }
  EXPECT_FALSE(back.runs[2].ok);
  EXPECT_EQ(back.runs[2].error, failed.error);
  ASSERT_EQ(back.ablations.size(), 1u);
  EXPECT_EQ(back.ablations[0].name, "monitor=background");
  EXPECT_EQ(back.ablations[0].baseline, &back.runs[1]);
  EXPECT_DOUBLE_EQ(back.ablations[0].run.wall_seconds, 5.5);
  ASSERT_EQ(back.predictions.size(), 2u);
  EXPECT_EQ(back.predictions[0].label, "devices=2");
  EXPECT_DOUBLE_EQ(*back.predictions[0].error(), 6.0 / 6.5 - 1);
  EXPECT_EQ(back.predictions[1].workload.interconnect, "nvlink");
  EXPECT_EQ(back.predictions[1].band, 0.4);
  ASSERT_EQ(back.findings.size(), 1u);
  EXPECT_EQ(to_json(back.findings[0]), to_json(finding()));
  ASSERT_TRUE(back.model.has_value());
  EXPECT_EQ(to_json(*back.model), to_json(model));
  EXPECT_EQ(to_json(back), to_json(result)) << "read and written again, the same document";
}

// Strict: a field missing or of another type is named, with the file and where it is.
TEST(DoctorFile, AMissingOrMistypedFieldIsNamedWithItsFile) {
  DoctorResult result;
  result.runs.push_back(measured(1, 10.0));
  const nlohmann::ordered_json good = to_json(result);
  const auto message_for = [](const nlohmann::ordered_json& doc) {
    try {
      read_doctor_result(doc, "study.json");
    } catch (const DataError& e) {
      return std::string(e.what());
    }
    return std::string("(read without an error)");
  };
  nlohmann::ordered_json bad = good;
  bad.erase("runs");
  EXPECT_EQ(message_for(bad), "study.json has no \"runs\"");
  bad = good;
  bad["runs"][0]["devices"] = "two";
  EXPECT_EQ(message_for(bad), "study.json runs[0] field \"devices\" is \"two\", expected an integer");
  bad = good;
  bad["runs"][0]["summary"]["wall_seconds"] = "slow";
  EXPECT_EQ(message_for(bad), "study.json runs[0] summary field \"wall_seconds\" is \"slow\", expected a number");
  bad = good;
  bad["schema"] = "ddpscope.summary/1";
  EXPECT_EQ(message_for(bad),
            "study.json field \"schema\" is \"ddpscope.summary/1\", expected \"ddpscope.doctor/1\", "
            "\"ddpscope.compare/1\" or \"ddpscope.analyze/1\"");
  EXPECT_EQ(message_for(nlohmann::ordered_json::array()), "study.json is not a JSON object");
}

}  // namespace
}  // namespace ddp
