// build_report_view: the numbers and texts report.html shows, made from a DoctorResult (here the
// seed fixture, read with doctor.json's reader) before any formatting.
#include "doctor/report_view.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "doctor/doctor_file.h"

namespace ddp {
namespace {

using Json = nlohmann::ordered_json;

Json load_fixture(const std::string& name) {
  std::ifstream in(std::filesystem::path(DDPSCOPE_SOURCE_DIR) / "tests" / "doctor" / "fixtures" / name);
  EXPECT_TRUE(in) << "missing fixture " << name;
  return Json::parse(in);
}

ReportView view_of(const Json& doc) { return build_report_view(read_doctor_result(doc, "fixture.json")); }

double phase(const ReportRun& run, Phase p) { return (*run.phase_seconds)[static_cast<std::size_t>(p)]; }

TEST(ReportView, ShowsTheSeedDoctorsRuns) {
  const ReportView view = view_of(load_fixture("seed_doctor.json"));
  EXPECT_EQ(view.kind, ReportKind::kDoctor);
  EXPECT_EQ(view.schema, "ddpscope.doctor/1");
  EXPECT_TRUE(view.seed_preset);
  ASSERT_EQ(view.runs.size(), 2u);
  const ReportRun& one = view.runs[0];
  const ReportRun& two = view.runs[1];
  EXPECT_EQ(one.label, "devices=1");
  EXPECT_EQ(two.devices, 2);
  EXPECT_DOUBLE_EQ(one.wall_seconds, 13.63);
  EXPECT_DOUBLE_EQ(two.wall_seconds, 9.72);
  EXPECT_DOUBLE_EQ(one.speedup, 1.0);
  EXPECT_DOUBLE_EQ(two.speedup, 13.63 / 9.72) << "the 1-device run's wall over this one's";
  EXPECT_DOUBLE_EQ(two.samples_per_second, 1000000.0 / 9.72);
  EXPECT_DOUBLE_EQ(two.optimizer_steps, 1000);
  ASSERT_TRUE(two.phase_seconds);
  EXPECT_DOUBLE_EQ(phase(two, Phase::kCommWait), 1.94) << "the mean over the ranks";
  EXPECT_DOUBLE_EQ(phase(one, Phase::kCommWait), 0);
  EXPECT_DOUBLE_EQ(phase(one, Phase::kForward), 6.05);
  ASSERT_EQ(two.utilization.size(), 2u);
  EXPECT_EQ(two.utilization[1].device, 1);
  EXPECT_EQ(two.utilization[1].points.size(), 98u);
  EXPECT_EQ(two.utilization[1].points[0], std::make_pair(0.0, 77.5));
  EXPECT_DOUBLE_EQ(two.monitor_interval_ms, 100);
  EXPECT_FALSE(two.per_step_probe);
  EXPECT_NE(two.command.find("--devices 2"), std::string::npos);
  ASSERT_TRUE(view.headline);
  EXPECT_EQ(view.headline->devices, 2);
  EXPECT_DOUBLE_EQ(view.headline->speedup, 13.63 / 9.72);
}

TEST(ReportView, PutsItsOwnNoteBeforeTheDoctorsAndShowsTheConfigurationInTheTablesOrder) {
  const ReportView view = view_of(load_fixture("seed_doctor.json"));
  ASSERT_EQ(view.notes.size(), 4u);
  EXPECT_EQ(view.notes[0], "The configuration asks for 3 devices; the largest run used 2.");
  EXPECT_EQ(view.notes[1].rfind("The seed preset asks for 3 devices", 0), 0u);
  ASSERT_FALSE(view.config.empty());
  EXPECT_EQ(view.config.front(), std::make_pair(std::string("input_dim"), std::string("10")));
  EXPECT_EQ(view.config.back(), std::make_pair(std::string("preset"), std::string("seed")));
  const auto value = [&](const std::string& key) {
    for (const auto& [k, v] : view.config)
      if (k == key) return v;
    return std::string("(absent)");
  };
  EXPECT_EQ(value("betas"), "0.9,0.999");
  EXPECT_EQ(value("ckpt_path"), "—") << "an empty text shows as absent";
  EXPECT_EQ(value("shuffle"), "true");
}

TEST(ReportView, BuildsTheSpeedupCurvesAtTheConfigurationsShape) {
  const ReportView view = view_of(load_fixture("seed_doctor.json"));
  EXPECT_EQ(view.measured_speedups, (ReportPoints{{1, 1.0}, {2, 13.63 / 9.72}}));
  ASSERT_EQ(view.predicted_speedups.size(), 6u);
  const SpeedupCurve& measured = view.predicted_speedups[0];
  EXPECT_EQ(measured.interconnect, "measured");
  // Relative to the model's own 1-device time; the batch-1024 and width-1024 rows are not the curve.
  EXPECT_EQ(measured.points,
            (ReportPoints{{1, 1.0}, {2, 13.21 / 9.31}, {3, 13.21 / 7.62}, {8, 13.21 / 5.9}, {64, 13.21 / 6.8}}));
  const SpeedupCurve& nvlink = view.predicted_speedups[2];
  EXPECT_EQ(nvlink.interconnect, "nvlink");
  EXPECT_EQ(nvlink.points, (ReportPoints{{1, 1.0}, {3, 13.21 / 5.919}, {8, 13.21 / 3.658}, {64, 13.21 / 2.614}}))
      << "every preset starts at the shared 1-device time";
  EXPECT_EQ(view.predicted_speedups[5].interconnect, "10gbe");
}

TEST(ReportView, ShowsAblationsFindingsModelPredictionsAndCommands) {
  const ReportView view = view_of(load_fixture("seed_doctor.json"));
  ASSERT_TRUE(view.ablations);
  ASSERT_EQ(view.ablations->size(), 5u);
  const AblationRow& probe = (*view.ablations)[1];
  EXPECT_EQ(probe.name, "monitor-per-step");
  EXPECT_DOUBLE_EQ(probe.devices, 2);
  EXPECT_DOUBLE_EQ(probe.change, (13.31 - 9.72) / 9.72);
  EXPECT_DOUBLE_EQ(probe.cost_seconds_per_step, (13.31 - 9.72) / 1000);
  EXPECT_DOUBLE_EQ(probe.epochs_run, 20);
  EXPECT_TRUE(probe.extrapolated);
  EXPECT_TRUE(probe.error.empty());
  EXPECT_FALSE(view.ablations->back().extrapolated);
  // Runs without their epochs' spread: the effect is the change, its noise unknown, and said.
  EXPECT_DOUBLE_EQ(probe.effect, (13.31 - 9.72) / 9.72);
  EXPECT_TRUE(std::isnan(probe.effect_uncertainty));
  EXPECT_FALSE(probe.measurable);
  EXPECT_EQ(probe.effect_text, "+36.9 %, noise unknown: devices=2 monitor-per-step recorded no spread of its epochs");

  ASSERT_TRUE(view.findings);
  ASSERT_EQ(view.findings->size(), 3u);
  const FindingView& top = view.findings->front();
  EXPECT_EQ(top.title, "The utilization probe in every step costs 1.9 ms per step");
  EXPECT_DOUBLE_EQ(top.cost_seconds, 3.8);
  EXPECT_DOUBLE_EQ(top.share_of_wall, 0.39);
  EXPECT_EQ(top.evidence, (std::vector<std::string>{"devices=2", "monitor-per-step@2"}));
  EXPECT_EQ(top.fix, "Sample utilization in the background (--monitor-mode background).");

  EXPECT_EQ(view.model.front().key, "alpha_seconds");
  EXPECT_EQ(view.model.front().number, 2.1e-05);

  ASSERT_EQ(view.predictions.size(), 22u);
  const PredictionView& first = view.predictions[0];
  EXPECT_EQ(first.label, "devices=1");
  EXPECT_EQ(first.interconnect, "measured");
  EXPECT_DOUBLE_EQ(first.predicted_wall_seconds, 13.21);
  EXPECT_DOUBLE_EQ(first.measured_wall_seconds, 13.63);
  EXPECT_NEAR(first.error, 13.21 / 13.63 - 1, 1e-12);
  EXPECT_TRUE(std::isnan(first.hidden_layers)) << "depth is a column only where a prediction varied it";
  EXPECT_TRUE(std::isnan(view.predictions[2].error)) << "not measured: no error";

  EXPECT_EQ(view.commands.front(), "ddpscope doctor --preset seed");
  EXPECT_EQ(view.commands.size(), 3u) << "the study's, then each run's";
}

// Each effect as the doctor computes it from its runs' noise: known where both runs recorded
// their epochs' spread.
TEST(ReportView, ShowsEachAblationsEffectWithItsNoise) {
  Json doc = load_fixture("seed_doctor.json");
  const auto with_spread = [](Json& run) {
    const double epoch = run["wall_seconds"].get<double>() / 200;
    run["summary"]["steady_epochs"] = {{"count", 199}, {"mean_seconds", epoch}, {"sd_seconds", 0.05 * epoch}};
  };
  with_spread(doc["runs"][1]);
  with_spread(doc["runs_ablations"][1]);
  const ReportView view = view_of(doc);
  const AblationRow& known = (*view.ablations)[1];
  EXPECT_DOUBLE_EQ(known.effect, 13.31 / 9.72 - 1);
  EXPECT_GT(known.effect_uncertainty, 0);
  EXPECT_TRUE(known.measurable);
  EXPECT_EQ(known.effect_text.substr(0, 14), "36.9 % slower ");
  EXPECT_GT(known.baseline_band, 0);
  const AblationRow& unknown = (*view.ablations)[2];  // its own run recorded no spread
  EXPECT_TRUE(std::isnan(unknown.effect_uncertainty));
  EXPECT_DOUBLE_EQ(unknown.baseline_band, known.baseline_band) << "one baseline";
  EXPECT_FALSE(unknown.measurable);
}

TEST(ReportView, CompareHasNeitherAblationsNorFindings) {
  const ReportView view = view_of(load_fixture("minimal_compare.json"));
  EXPECT_EQ(view.kind, ReportKind::kCompare);
  EXPECT_FALSE(view.ablations);
  EXPECT_FALSE(view.findings);
  EXPECT_FALSE(view.headline) << "one device only";
}

TEST(ReportView, ShowsEachRanksArrivalLagPerStepAndTheStraggler) {
  Json doc = load_fixture("seed_doctor.json");
  doc["runs"][1]["summary"]["arrivals"] = {
      {"collectives", 5},
      {"steps", 5},
      {"dropped", 0},
      {"per_rank", Json::array()},
      {"straggler", {{"rank", 1}, {"last_share", 0.9}, {"late_seconds", 1e-3}, {"cost_seconds_per_step", 1e-3}}},
      {"lag_ms_per_rank", {{0, 0.1}, {1.5, 2.0, 2.5}}}};
  const ReportView view = view_of(doc);
  const ReportRun& two = view.runs[1];
  EXPECT_EQ(two.straggler_rank, 1);
  ASSERT_EQ(two.arrival_lag_ms.size(), 2u);
  // Point k of n stands for the steps from k * 5 / n: drawn at the first of them, from 1.
  EXPECT_EQ(two.arrival_lag_ms[0], (ReportPoints{{1, 0}, {3.0, 0.1}}));
  EXPECT_EQ(two.arrival_lag_ms[1], (ReportPoints{{1, 1.5}, {2.0, 2.0}, {4.0, 2.5}}));
  EXPECT_TRUE(view.runs[0].arrival_lag_ms.empty());
  EXPECT_EQ(view.runs[0].straggler_rank, -1);
}

TEST(ReportView, AFailedRunHasNoNumbers) {
  Json doc = load_fixture("seed_doctor.json");
  Json& two = doc["runs"][1];
  two["ok"] = false;
  two["error"] = "rank 1 exited with code 4";
  const ReportView view = view_of(doc);
  EXPECT_TRUE(std::isnan(view.runs[1].wall_seconds));
  EXPECT_TRUE(std::isnan(view.runs[1].speedup));
  EXPECT_FALSE(view.runs[1].phase_seconds);
  EXPECT_EQ(view.measured_speedups, (ReportPoints{{1, 1.0}}));
}

}  // namespace
}  // namespace ddp
