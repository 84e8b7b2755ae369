// report.html byte for byte: each case reads one document with doctor.json's reader, renders its
// result and compares the page with a file under fixtures/golden/. The style sheet and script
// stand as one marker line each in the files (report_assets_test checks them byte for byte), so an
// edit to the assets does not touch these pages.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "doctor/doctor_file.h"
#include "doctor/report_assets.h"
#include "doctor/report_html.h"
#include "support/run_command.h"

namespace ddp {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

const fs::path kFixtures = fs::path(DDPSCOPE_SOURCE_DIR) / "tests" / "doctor" / "fixtures";

Json load_fixture(const std::string& name) {
  std::ifstream in(kFixtures / name);
  EXPECT_TRUE(in) << "missing fixture " << name;
  return Json::parse(in);
}

std::string replace_once(std::string text, std::string_view what, std::string_view with) {
  const std::size_t at = text.find(what);
  EXPECT_NE(at, std::string::npos) << "the page lacks an asset";
  if (at != std::string::npos) text.replace(at, what.size(), with);
  return text;
}

std::string with_asset_markers(std::string html) {
  html = replace_once(std::move(html), report_css(), "/* report.css */\n");
  return replace_once(std::move(html), report_js(), "// report.js\n");
}

// Compares with fixtures/golden/<name>.html. A differing or missing page is left in the
// temporary folder, for `diff` or as the file of a new case.
void expect_golden(const std::string& name, const Json& doc) {
  const std::string actual = with_asset_markers(render_report_html(read_doctor_result(doc, name + ".json")));
  const fs::path golden = kFixtures / "golden" / (name + ".html");
  const bool exists = fs::exists(golden);
  if (exists && testing::read_text(golden) == actual) return;
  const fs::path written = fs::temp_directory_path() / ("ddpscope_report_golden_" + name + ".html");
  std::ofstream(written) << actual;
  ADD_FAILURE() << name << ": " << (exists ? "the page differs from " : "missing golden page ") << golden
                << "; this run's page is " << written;
}

TEST(ReportGolden, SeedDoctor) { expect_golden("seed_doctor", load_fixture("seed_doctor.json")); }

// The arrival lag chart: the 2-device run's ranks, rank 1 last and named the straggler.
TEST(ReportGolden, SeedDoctorWithArrivals) {
  Json doc = load_fixture("seed_doctor.json");
  for (Json& run : doc["runs"]) {
    if (run["summary"]["world_size"] != 2) continue;
    Json lag0 = Json::array(), lag1 = Json::array();
    for (int k = 0; k < 40; ++k) {
      lag0.push_back(0.01 * (k % 3));
      lag1.push_back(0.8 + 0.05 * (k % 7));
    }
    run["summary"]["arrivals"] = {
        {"collectives", 400},
        {"steps", 400},
        {"dropped", 0},
        {"per_rank", Json::array()},
        {"straggler", {{"rank", 1}, {"last_share", 0.97}, {"late_seconds", 9e-4}, {"cost_seconds_per_step", 8.7e-4}}},
        {"lag_ms_per_rank", {lag0, lag1}}};
  }
  expect_golden("seed_doctor_arrivals", doc);
}

TEST(ReportGolden, MinimalCompare) { expect_golden("minimal_compare", load_fixture("minimal_compare.json")); }

// The branches the seed fixture does not reach: linear axes, the per-step probe, a failed
// ablation, a predicted depth, an error beyond tolerance, no findings, no seed preset.
TEST(ReportGolden, SeedDoctorVaried) {
  Json doc = load_fixture("seed_doctor.json");
  Json predictions = Json::array();
  for (const Json& p : doc["predictions"])
    if (p["devices"].get<int>() <= 8) predictions.push_back(p);
  predictions[0]["predicted_wall_seconds"] = 1.31 * predictions[0]["measured_wall_seconds"].get<double>();
  predictions[1]["hidden_layers"] = 8;
  doc["predictions"] = predictions;
  for (Json& run : doc["runs"]) run["summary"]["config"]["monitor_mode"] = "per-step";
  Json failed = doc["runs_ablations"][0];
  failed["label"] = "devices=2 no-overlap";
  failed["devices"] = 2;
  failed["ok"] = false;
  failed["error"] = "rank 1 exited with code 4";
  failed.erase("summary");
  failed.erase("wall_seconds");
  doc["ablations"].push_back({{"name", "no-overlap"}, {"devices", 2}, {"error", "rank 1 exited with code 4"}});
  doc["runs_ablations"].push_back(failed);
  doc["findings"] = Json::array();
  doc["config"]["preset"] = "";
  expect_golden("seed_doctor_varied", doc);
}

// The ablations' effects with their noise (each run's steady epochs): the effect chart's error
// bars and noise band.
TEST(ReportGolden, SeedDoctorWithNoise) {
  Json doc = load_fixture("seed_doctor.json");
  const auto with_spread = [](Json& run, double relative_sd) {
    const double epoch = run["wall_seconds"].get<double>() / run["epochs"].get<double>();
    run["summary"]["steady_epochs"] = {{"count", 19}, {"mean_seconds", epoch}, {"sd_seconds", relative_sd * epoch}};
  };
  for (Json& run : doc["runs"]) with_spread(run, 0.05);
  for (Json& run : doc["runs_ablations"]) with_spread(run, 0.07);
  expect_golden("seed_doctor_noise", doc);
}

TEST(ReportGolden, MonitorOff) {
  Json doc = load_fixture("seed_doctor.json");
  for (Json& run : doc["runs"]) {
    run["summary"]["config"]["monitor_interval_ms"] = 0;
    run["summary"]["utilization_per_rank"] = Json::array();
  }
  expect_golden("monitor_off", doc);
}

// The question in the title follows the largest run's speedup, the 1-device run's wall over its.
TEST(ReportGolden, QuestionFollowsTheSpeedup) {
  Json doc = load_fixture("seed_doctor.json");
  const double one = doc["runs"][0]["wall_seconds"].get<double>();
  doc["runs"][1]["wall_seconds"] = one / 0.8;
  expect_golden("slower_than_one", doc);
  doc["runs"][1]["wall_seconds"] = one / 1.9;
  expect_golden("faster_than_one", doc);
}

// A study whose one run failed: no chart can be drawn, and each place says why.
TEST(ReportGolden, NoCompletedRun) {
  Json doc = load_fixture("seed_doctor.json");
  doc["runs"] = Json::array({{{"label", "devices=2"},
                              {"devices", 2},
                              {"command", "ddpscope train --devices 2"},
                              {"epochs_run", 0},
                              {"epochs", 200},
                              {"extrapolated", false},
                              {"ok", false},
                              {"error", "x"}}});
  doc["model"] = nullptr;
  doc["predictions"] = doc["ablations"] = doc["runs_ablations"] = doc["findings"] = Json::array();
  expect_golden("no_completed_run", doc);
}

}  // namespace
}  // namespace ddp
