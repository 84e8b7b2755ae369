// build_report_view: the numbers and texts report.html shows, read from doctor.json before any
// formatting; what is missing or mistyped becomes absent.
#include "doctor/report_view.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

namespace ddp {
namespace {

using Json = nlohmann::ordered_json;

Json load_fixture(const std::string& name) {
  std::ifstream in(std::filesystem::path(DDPSCOPE_SOURCE_DIR) / "tests" / "doctor" / "fixtures" / name);
  EXPECT_TRUE(in) << "missing fixture " << name;
  return Json::parse(in);
}

double phase(const ReportRun& run, Phase p) { return (*run.phase_seconds)[static_cast<std::size_t>(p)]; }

TEST(ReportView, ReadsTheSeedDoctorsRuns) {
  const ReportView view = build_report_view(load_fixture("seed_doctor.json"));
  EXPECT_EQ(view.kind, ReportKind::kDoctor);
  EXPECT_EQ(view.schema, "ddpscope.doctor/1");
  EXPECT_EQ(view.version, "0.1.0");
  EXPECT_TRUE(view.seed_preset);
  ASSERT_EQ(view.runs.size(), 2u);
  const ReportRun& one = view.runs[0];
  const ReportRun& two = view.runs[1];
  EXPECT_EQ(one.label, "devices=1");
  EXPECT_EQ(two.devices, 2);
  EXPECT_DOUBLE_EQ(one.wall_seconds, 13.63);
  EXPECT_DOUBLE_EQ(two.wall_seconds, 9.72);
  EXPECT_DOUBLE_EQ(one.speedup, 1.0);
  EXPECT_DOUBLE_EQ(two.speedup, 1.4023) << "the doctor's stated speedup, not 13.63 / 9.72";
  EXPECT_DOUBLE_EQ(two.samples_per_second, 102880.7);
  EXPECT_DOUBLE_EQ(two.optimizer_steps, 1000);
  ASSERT_TRUE(two.phase_seconds);
  EXPECT_DOUBLE_EQ(phase(two, Phase::kCommWait), 1.94);
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
  EXPECT_DOUBLE_EQ(view.headline->speedup, 1.4023);
}

TEST(ReportView, PutsItsOwnNoteBeforeTheDoctorsAndKeepsTheConfigurationOrder) {
  const ReportView view = build_report_view(load_fixture("seed_doctor.json"));
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
  EXPECT_EQ(build_report_view(nlohmann::json(load_fixture("seed_doctor.json"))).config.front().first, "accelerator")
      << "nlohmann::json sorts the keys";
}

TEST(ReportView, BuildsTheSpeedupCurvesAtTheConfigurationsShape) {
  const ReportView view = build_report_view(load_fixture("seed_doctor.json"));
  EXPECT_EQ(view.measured_speedups, (ReportPoints{{1, 1.0}, {2, 1.4023}}));
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

TEST(ReportView, ReadsAblationsFindingsModelPredictionsAndCommands) {
  const ReportView view = build_report_view(load_fixture("seed_doctor.json"));
  ASSERT_TRUE(view.ablations);
  ASSERT_EQ(view.ablations->size(), 5u);
  const AblationRow& probe = (*view.ablations)[1];
  EXPECT_EQ(probe.name, "monitor-per-step");
  EXPECT_DOUBLE_EQ(probe.devices, 2);
  EXPECT_DOUBLE_EQ(probe.change, (13.31 - 9.72) / 9.72);
  EXPECT_DOUBLE_EQ(probe.cost_seconds_per_step, 0.00195);
  EXPECT_DOUBLE_EQ(probe.epochs_run, 20);
  EXPECT_TRUE(probe.extrapolated);
  EXPECT_TRUE(probe.error.empty());
  EXPECT_FALSE(view.ablations->back().extrapolated);

  ASSERT_TRUE(view.findings);
  ASSERT_EQ(view.findings->size(), 3u);
  const FindingView& top = view.findings->front();
  EXPECT_EQ(top.title, "The utilization probe in every step costs 1.9 ms per step");
  EXPECT_DOUBLE_EQ(top.cost_seconds, 3.8);
  EXPECT_DOUBLE_EQ(top.share_of_wall, 0.39);
  EXPECT_EQ(top.evidence, (std::vector<std::string>{"devices=2", "monitor-per-step@2"}));
  EXPECT_EQ(top.fix, "Sample utilization in the background (--monitor-mode background).");

  ASSERT_EQ(view.model.size(), 6u);
  EXPECT_EQ(view.model[0].key, "alpha_seconds");
  EXPECT_EQ(view.model[0].number, 2.1e-05);

  ASSERT_EQ(view.predictions.size(), 22u);
  const PredictionView& first = view.predictions[0];
  EXPECT_EQ(first.label, "—");
  EXPECT_EQ(first.interconnect, "measured");
  EXPECT_DOUBLE_EQ(first.predicted_wall_seconds, 13.21);
  EXPECT_DOUBLE_EQ(first.measured_wall_seconds, 13.63);
  EXPECT_DOUBLE_EQ(first.error, -0.0308);
  EXPECT_TRUE(std::isnan(first.hidden_layers));
  EXPECT_TRUE(std::isnan(view.predictions[2].error)) << "null is absent";

  EXPECT_EQ(view.commands, (std::vector<std::string>{"ddpscope doctor --preset seed",
                                                     "ddpscope predict --from doctor.json --devices 8 --interconnect "
                                                     "nvlink"}));
}

TEST(ReportView, ReadsEachAblationsEffectAndLeavesItAbsentWhereTheDocumentHasNone) {
  Json doc = load_fixture("seed_doctor.json");
  doc["ablations"][1]["effect"] = {{"relative", 0.369},
                                   {"uncertainty", 0.045},
                                   {"measurable", true},
                                   {"text", "36.9 % slower (±4.5 %)"},
                                   {"baseline_band", 0.033}};
  doc["ablations"][2]["effect"] = {{"relative", 0.3},
                                   {"uncertainty", nullptr},
                                   {"measurable", false},
                                   {"text", "+30.0 %, noise unknown"},
                                   {"baseline_band", nullptr}};
  const ReportView view = build_report_view(doc);
  const AblationRow& known = (*view.ablations)[1];
  EXPECT_DOUBLE_EQ(known.effect, 0.369);
  EXPECT_DOUBLE_EQ(known.effect_uncertainty, 0.045);
  EXPECT_TRUE(known.measurable);
  EXPECT_EQ(known.effect_text, "36.9 % slower (±4.5 %)");
  EXPECT_DOUBLE_EQ(known.baseline_band, 0.033);
  const AblationRow& unknown = (*view.ablations)[2];
  EXPECT_DOUBLE_EQ(unknown.effect, 0.3);
  EXPECT_TRUE(std::isnan(unknown.effect_uncertainty));
  EXPECT_TRUE(std::isnan(unknown.baseline_band));
  EXPECT_FALSE(unknown.measurable);
  const AblationRow& none = (*view.ablations)[0];  // a doctor.json from before effects
  EXPECT_TRUE(std::isnan(none.effect));
  EXPECT_TRUE(none.effect_text.empty());
}

TEST(ReportView, ComputesSpeedupFromWallTimesWhereTheDoctorStatedNone) {
  Json doc = load_fixture("seed_doctor.json");
  doc.erase("speedup");
  const ReportView view = build_report_view(doc);
  EXPECT_DOUBLE_EQ(view.runs[0].speedup, 1.0);
  EXPECT_DOUBLE_EQ(view.runs[1].speedup, 13.63 / 9.72);
}

TEST(ReportView, CompareJsonHasNeitherAblationsNorFindings) {
  const ReportView view = build_report_view(load_fixture("minimal_compare.json"));
  EXPECT_EQ(view.kind, ReportKind::kCompare);
  EXPECT_FALSE(view.ablations);
  EXPECT_FALSE(view.findings);
  EXPECT_FALSE(view.headline) << "one device only";
  Json doc = load_fixture("minimal_compare.json");
  doc["findings"] = Json::array();
  const ReportView with_findings = build_report_view(doc);
  EXPECT_EQ(with_findings.kind, ReportKind::kDoctor);
  ASSERT_TRUE(with_findings.findings);
  EXPECT_TRUE(with_findings.findings->empty());
}

TEST(ReportView, ReadsEachRanksArrivalLagPerStepAndTheStraggler) {
  const Json doc = Json::parse(R"({"runs": [{"devices": 2, "summary": {"arrivals": {"steps": 5,
    "straggler": {"rank": 1}, "lag_ms_per_rank": [[0, 0.1], [1.5, "x", 2.5]]}}}, {"devices": 1, "summary": {}}]})");
  const ReportView view = build_report_view(doc);
  ASSERT_EQ(view.runs.size(), 2u);
  const ReportRun& two = view.runs[0];
  EXPECT_EQ(two.straggler_rank, 1);
  ASSERT_EQ(two.arrival_lag_ms.size(), 2u);
  // Point k of n stands for the steps from k * 5 / n: drawn at the first of them, from 1.
  EXPECT_EQ(two.arrival_lag_ms[0], (ReportPoints{{1, 0}, {3.0, 0.1}}));
  EXPECT_EQ(two.arrival_lag_ms[1], (ReportPoints{{1, 1.5}, {4.0, 2.5}}));  // a mistyped point is left out
  EXPECT_TRUE(view.runs[1].arrival_lag_ms.empty());
  EXPECT_EQ(view.runs[1].straggler_rank, -1);
}

TEST(ReportView, MissingAndMistypedFieldsBecomeAbsent) {
  const ReportView view = build_report_view(Json::parse(R"({
    "schema": 7, "config": [], "notes": ["kept", 3], "runs": [5, {"label": "x", "summary": {"world_size": 2,
    "wall_seconds": "slow", "phases": {"forward": -1, "data": 0.5}}, "utilization": [{"points": [[1], "a",
    [0, 50]]}]}], "ablations": [{"extrapolated": "yes"}], "findings": [null, {"evidence": [1, "e"]}],
    "model": {"alpha_seconds": "n/a"}, "predictions": [null], "commands": "not a list"
  })"));
  EXPECT_EQ(view.kind, ReportKind::kDoctor);
  EXPECT_EQ(view.schema, "7");
  EXPECT_EQ(view.version, "—");
  EXPECT_TRUE(view.config.empty());
  EXPECT_EQ(view.notes, std::vector<std::string>{"kept"});
  ASSERT_EQ(view.runs.size(), 2u);
  EXPECT_EQ(view.runs[0].label, "devices=0");
  EXPECT_FALSE(view.runs[0].phase_seconds);
  EXPECT_TRUE(std::isnan(view.runs[0].speedup));
  const ReportRun& odd = view.runs[1];
  EXPECT_EQ(odd.devices, 2) << "from the summary's world size";
  EXPECT_TRUE(std::isnan(odd.wall_seconds));
  EXPECT_TRUE(std::isnan(odd.monitor_interval_ms));
  ASSERT_TRUE(odd.phase_seconds);
  EXPECT_DOUBLE_EQ(phase(odd, Phase::kForward), 0) << "negative seconds count as none";
  EXPECT_DOUBLE_EQ(phase(odd, Phase::kData), 0.5);
  ASSERT_EQ(odd.utilization.size(), 1u);
  EXPECT_EQ(odd.utilization[0].points, (ReportPoints{{0, 50}}));
  EXPECT_FALSE(view.headline);
  EXPECT_TRUE(view.measured_speedups.empty());
  ASSERT_EQ(view.ablations->size(), 1u);
  EXPECT_FALSE(view.ablations->front().extrapolated);
  EXPECT_TRUE(std::isnan(view.ablations->front().change));
  ASSERT_EQ(view.findings->size(), 2u);
  EXPECT_EQ(view.findings->at(1).evidence, std::vector<std::string>{"e"});
  ASSERT_EQ(view.model.size(), 1u);
  EXPECT_FALSE(view.model[0].number);
  EXPECT_EQ(view.model[0].text, "n/a");
  ASSERT_EQ(view.predictions.size(), 1u);
  EXPECT_EQ(view.predictions[0].label, "—");
  EXPECT_TRUE(view.commands.empty());
  EXPECT_TRUE(build_report_view(Json::array()).runs.empty());
}

}  // namespace
}  // namespace ddp
