#include "doctor/report_html.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "doctor/doctor_file.h"
#include "doctor/svg_chart.h"

namespace ddp {
namespace {

using Json = nlohmann::ordered_json;

// Fixtures sit beside this file: DDPSCOPE_TEST_DATA points at another module's folder.
Json load_fixture(const std::string& name) {
  const std::filesystem::path path = std::filesystem::path(__FILE__).parent_path() / "fixtures" / name;
  std::ifstream in(path);
  EXPECT_TRUE(in) << "missing fixture " << path;
  return Json::parse(in);
}

// The page of a document, read as doctor.json is.
std::string render(const Json& doc) { return render_report_html(read_doctor_result(doc, "fixture.json")); }

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

// The markup of the element that carries `id`, up to the first `closing` tag after it.
std::string element_with_id(const std::string& html, const std::string& id, const std::string& closing) {
  const std::size_t start = html.find("id=\"" + id + "\"");
  if (start == std::string::npos) return "";
  const std::size_t end = html.find(closing, start);
  return html.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// The golden pages hold these digits: a coordinate on a half tenth, a bit above or below it after
// a fused multiply-add, rounds the same way from every build.
TEST(SvgCoord, RoundsAHalfTenthAwayFromZeroWhicheverSideOfItTheArithmeticLands) {
  EXPECT_EQ(svg_coord(71.25), "71.3");
  EXPECT_EQ(svg_coord(std::nextafter(71.25, 0.0)), "71.3");
  EXPECT_EQ(svg_coord(std::nextafter(71.25, 100.0)), "71.3");
  EXPECT_EQ(svg_coord(0.1 / 0.8 * 570), "71.3");
  EXPECT_EQ(svg_coord(-4.05), "-4.1");
  EXPECT_EQ(svg_coord(71.24), "71.2");
  EXPECT_EQ(svg_coord(120.0), "120");
  EXPECT_EQ(svg_coord(-0.01), "0");
  EXPECT_EQ(svg_coord(std::nan("")), "0");
}

TEST(ReportHtml, IsOneCompleteDocumentWithOneInlineScript) {
  const std::string html = render(load_fixture("seed_doctor.json"));
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_EQ(count(html, "<html"), 1u);
  EXPECT_EQ(count(html, "</html>"), 1u);
  EXPECT_EQ(count(html, "<style>"), 1u);
  EXPECT_EQ(count(html, "<script"), 1u);
  EXPECT_EQ(count(html, "<script>"), 1u) << "the only script is inline, without src";
  EXPECT_NE(html.find("@media print"), std::string::npos);
}

TEST(ReportHtml, ReferencesNothingOnTheNetwork) {
  const std::string html = render(load_fixture("seed_doctor.json"));
  const std::regex remote(R"re((src|href|xlink:href)\s*=\s*["']?\s*(https?:)?//)re", std::regex::icase);
  EXPECT_FALSE(std::regex_search(html, remote));
  const std::regex any_link(R"re(\shref\s*=\s*"([^"]*)")re");
  for (auto it = std::sregex_iterator(html.begin(), html.end(), any_link); it != std::sregex_iterator(); ++it) {
    EXPECT_EQ((*it)[1].str().rfind('#', 0), 0u) << "links stay inside the page: " << (*it)[1];
  }
  EXPECT_EQ(count(html, "<link"), 0u);
  EXPECT_EQ(count(html, "@import"), 0u);
  EXPECT_EQ(count(html, "url(http"), 0u);
  EXPECT_NE(html.find("default-src 'none'"), std::string::npos) << "the page forbids fetches itself";
}

TEST(ReportHtml, HasEverySection) {
  const std::string html = render(load_fixture("seed_doctor.json"));
  for (const char* id : {"speedup-chart", "phase-chart", "utilization-chart", "arrival-chart", "ablations", "findings",
                         "predictions", "reproduce"}) {
    EXPECT_EQ(count(html, std::string("id=\"") + id + "\""), 1u) << id;
  }
  EXPECT_NE(html.find("Why are 2 devices only 1.40× faster than one?"), std::string::npos);
  EXPECT_NE(html.find("The seed preset asks for 3 devices"), std::string::npos) << "notes are shown";
  EXPECT_NE(html.find("The configuration asks for 3 devices; the largest run used 2."), std::string::npos);
}

TEST(ReportHtml, DrawsOneUtilizationSeriesPerDeviceOfTheLargestRun) {
  const std::string html = render(load_fixture("seed_doctor.json"));
  const std::string chart = element_with_id(html, "utilization-chart", "</figure>");
  ASSERT_FALSE(chart.empty());
  EXPECT_EQ(count(chart, "class=\"series\""), 2u);
  EXPECT_EQ(count(chart, "data-device=\"0\""), 1u);
  EXPECT_EQ(count(chart, "data-device=\"1\""), 1u);
  EXPECT_NE(chart.find("devices=2"), std::string::npos);
  EXPECT_EQ(count(html, "class=\"compare-series\""), 1u) << "the 1-device run is shown beside it";
}

TEST(ReportHtml, PlotsThePerStepProbesReadingsAndSaysHowTheyWereTaken) {
  Json doc = load_fixture("seed_doctor.json");
  for (auto& run : doc["runs"]) run["summary"]["config"]["monitor_mode"] = "per-step";
  const std::string chart = element_with_id(render(doc), "utilization-chart", "</figure>");
  EXPECT_EQ(count(chart, "class=\"series\""), 2u);
  EXPECT_NE(chart.find("read by the seed's probe in every training step"), std::string::npos) << chart;
  EXPECT_EQ(chart.find("sampled every"), std::string::npos) << chart;
}

// The seed preset's baselines used to carry one empty series per device: axes, no line.
TEST(ReportHtml, NeverDrawsAnEmptyUtilizationChart) {
  Json doc = load_fixture("seed_doctor.json");
  for (auto& run : doc["runs"])
    for (auto& device : run["summary"]["utilization_per_rank"]) device = Json::array();
  const std::string html = render(doc);
  const std::string chart = element_with_id(html, "utilization-chart", "</figure>");
  EXPECT_EQ(chart.find("<svg"), std::string::npos) << chart;
  EXPECT_NE(chart.find("No run here carries utilization samples: the monitor was on"), std::string::npos) << chart;
  EXPECT_EQ(count(html, "class=\"utilization-compare\""), 0u);
}

TEST(ReportHtml, SaysTheMonitorWasOffInPlaceOfTheChart) {
  Json doc = load_fixture("seed_doctor.json");
  for (auto& run : doc["runs"]) {
    run["summary"]["config"]["monitor_interval_ms"] = 0;
    run["summary"]["utilization_per_rank"] = Json::array();
  }
  const std::string chart = element_with_id(render(doc), "utilization-chart", "</figure>");
  EXPECT_EQ(chart.find("<svg"), std::string::npos) << chart;
  EXPECT_NE(chart.find("<code>--monitor-interval-ms 0</code>: no utilization measured"), std::string::npos) << chart;
}

TEST(ReportHtml, SaysNoRunCompletedInPlaceOfTheChart) {
  Json doc = load_fixture("seed_doctor.json");
  for (auto& run : doc["runs"]) {
    run["ok"] = false;
    run["error"] = "x";
  }
  const std::string chart = element_with_id(render(doc), "utilization-chart", "</figure>");
  EXPECT_NE(chart.find("No run completed, so no utilization was measured."), std::string::npos) << chart;
}

TEST(ReportHtml, SpeedupChartHasMeasuredPredictedAndIdeal) {
  const std::string html = render(load_fixture("seed_doctor.json"));
  const std::string chart = element_with_id(html, "speedup-chart", "</figure>");
  EXPECT_EQ(count(chart, "<svg"), 1u);
  EXPECT_EQ(count(chart, "class=\"measured\""), 2u);
  EXPECT_EQ(count(chart, "class=\"ideal\""), 1u);
  EXPECT_EQ(count(chart, "data-interconnect=\"measured\""), 1u);
  EXPECT_EQ(count(chart, "data-interconnect=\"nvlink\""), 1u);
  EXPECT_NE(chart.find("devices (log scale)"), std::string::npos) << "64 devices ask for a log axis";
  EXPECT_NE(chart.find(">64</text>"), std::string::npos) << "the largest prediction has its tick";
}

TEST(ReportHtml, StacksOneBarPerRunWithPhaseTitles) {
  const std::string html = render(load_fixture("seed_doctor.json"));
  const std::string chart = element_with_id(html, "phase-chart", "</figure>");
  EXPECT_EQ(count(chart, "class=\"bar\""), 2u);
  EXPECT_EQ(count(chart, "data-phase=\"comm_wait\""), 1u) << "only the 2-device run waits on communication";
  EXPECT_NE(chart.find("<title>devices=2 · comm_wait: 1.940 s"), std::string::npos);
  for (const char* phase : {"startup", "data", "forward", "backward", "comm_wait", "optimizer", "validation", "logging",
                            "monitor", "other"}) {
    EXPECT_NE(chart.find(std::string("</span>") + phase + "</li>"), std::string::npos) << "legend: " << phase;
  }
}

TEST(ReportHtml, ListsEveryFindingAndAblation) {
  const std::string html = render(load_fixture("seed_doctor.json"));
  const std::string list = element_with_id(html, "findings", "</ol>");
  EXPECT_EQ(count(list, "<li class=\"finding\""), 3u);
  EXPECT_NE(list.find("The utilization probe in every step costs 1.9 ms per step"), std::string::npos);
  EXPECT_NE(list.find("<code>monitor-per-step@2</code>"), std::string::npos);
  const std::string ablations = element_with_id(html, "ablations", "</table>");
  EXPECT_EQ(count(ablations, "<tr>"), 1u + 5u);
  // (17.52 - 13.63) s over the 1-device baseline's 2000 optimizer steps
  EXPECT_NE(ablations.find("+1.945 ms"), std::string::npos);
}

TEST(ReportHtml, PredictionTableShowsErrorsAndMarksLargeOnes) {
  Json doc = load_fixture("seed_doctor.json");
  doc["predictions"][0]["predicted_wall_seconds"] = 1.31 * doc["predictions"][0]["measured_wall_seconds"].get<double>();
  const std::string html = render(doc);
  const std::string table = element_with_id(html, "predictions", "</table>");
  EXPECT_EQ(count(table, "<tr>"), 1u + doc["predictions"].size());
  EXPECT_NE(table.find("class=\"num off\">+31.0 %"), std::string::npos);
  // An ablation the model does not see (loader workers): its difference is the ablation's effect.
  doc["predictions"][0]["modelled"] = false;
  const std::string unseen = element_with_id(render(doc), "predictions", "</table>");
  EXPECT_NE(unseen.find("class=\"num\">+31.0 % (not modelled)"), std::string::npos) << unseen;
}

TEST(ReportHtml, PredictionTableShowsLayersOnlyWhenPredicted) {
  Json doc = load_fixture("seed_doctor.json");
  EXPECT_EQ(render(doc).find(">layers</th>"), std::string::npos);
  doc["predictions"][0]["hidden_layers"] = 8;
  const std::string table = element_with_id(render(doc), "predictions", "</table>");
  EXPECT_NE(table.find(">layers</th>"), std::string::npos);
  EXPECT_NE(table.find("<td class=\"num\">8</td>"), std::string::npos);
}

TEST(ReportHtml, PredictionTableNamesEachRunByItsAblation) {
  Json doc = load_fixture("seed_doctor.json");
  const std::string chart = element_with_id(render(doc), "speedup-chart", "</svg>");
  // A run that changed no size: same devices, batch, width and layers as the baseline.
  doc["predictions"][0]["label"] = "devices=1";
  Json ablation = doc["predictions"][0];
  ablation["label"] = "devices=1 monitor-background";
  ablation["ablation"] = "monitor-background";
  ablation["predicted_wall_seconds"] = 3.5;
  doc["predictions"].push_back(ablation);
  const std::string html = render(doc);
  const std::string table = element_with_id(html, "predictions", "</table>");
  EXPECT_NE(table.find("<th>run</th>"), std::string::npos);
  EXPECT_NE(table.find("<td>devices=1</td>"), std::string::npos);
  EXPECT_NE(table.find("<td>devices=1 monitor-background</td>"), std::string::npos);
  // The ablation is no point of the configuration's predicted speedup curve.
  EXPECT_EQ(element_with_id(html, "speedup-chart", "</svg>"), chart);
}

TEST(ReportHtml, EscapesEveryStringFromTheJson) {
  Json doc = load_fixture("seed_doctor.json");
  doc["config"]["default_root_dir"] = "/tmp/<script>alert(1)</script>";
  doc["notes"].push_back("a & b \"quoted\" 'single'");
  doc["runs"][1]["label"] = "<b>two</b>";
  doc["findings"][0]["title"] = "<img src=x onerror=alert(1)>";
  doc["commands"][0] = "ddpscope doctor --name '<x>'";
  const std::string html = render(doc);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_NE(html.find("/tmp/&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("a &amp; b &quot;quoted&quot; &#39;single&#39;"), std::string::npos);
  EXPECT_EQ(html.find("<b>two</b>"), std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_NE(html.find("--name &#39;&lt;x&gt;&#39;"), std::string::npos);
  EXPECT_EQ(count(html, "<script"), 1u);
}

TEST(ReportHtml, RendersCompareJsonWithoutAblationsOrFindings) {
  const std::string html = render(load_fixture("minimal_compare.json"));
  EXPECT_NE(html.find("ddpscope compare report"), std::string::npos);
  for (const char* id :
       {"speedup-chart", "phase-chart", "utilization-chart", "arrival-chart", "predictions", "reproduce"}) {
    EXPECT_EQ(count(html, std::string("id=\"") + id + "\""), 1u) << id;
  }
  EXPECT_EQ(count(html, "id=\"findings\""), 0u);
  EXPECT_EQ(count(html, "id=\"ablations\""), 0u);
  EXPECT_NE(html.find("<span class=\"num\">7.</span>Reproduce"), std::string::npos) << "sections renumber";
  EXPECT_NE(html.find("No run here carries utilization samples"), std::string::npos);
  EXPECT_NE(html.find("ddpscope compare --devices 1 --max-epochs 10"), std::string::npos);
}

TEST(ReportHtml, DrawsOneArrivalLagSeriesPerRankOrSaysWhyThereIsNone) {
  Json doc = load_fixture("seed_doctor.json");
  std::string html = render(doc);
  EXPECT_EQ(count(html, "data-rank="), 0u);
  EXPECT_NE(html.find("No run here recorded arrivals at gradient collectives"), std::string::npos);
  for (auto& run : doc["runs"]) {
    if (run["devices"] != 2) continue;
    run["summary"]["arrivals"] = {
        {"collectives", 10},
        {"steps", 10},
        {"dropped", 0},
        {"per_rank", Json::array()},
        {"straggler", {{"rank", 0}, {"last_share", 0.9}, {"late_seconds", 6e-4}, {"cost_seconds_per_step", 6e-4}}},
        {"lag_ms_per_rank", {{0.5, 0.7}, {0.0, 0.0}}}};
  }
  html = render(doc);
  EXPECT_EQ(count(html, "data-rank="), 2u);
  EXPECT_NE(html.find("rank 0 (mean 0.6 ms), the straggler"), std::string::npos);
  EXPECT_EQ(html.find("No run here recorded arrivals"), std::string::npos);
}

TEST(ReportHtml, EmptyFindingsKeepTheListAndSaySo) {
  Json doc = load_fixture("seed_doctor.json");
  doc["findings"] = Json::array();
  const std::string html = render(doc);
  EXPECT_NE(html.find("<ol id=\"findings\"></ol>"), std::string::npos);
  EXPECT_NE(html.find("No rule fired"), std::string::npos);
}

TEST(ReportHtml, ShowsAFailedAblationWithItsError) {
  Json doc = load_fixture("seed_doctor.json");
  Json failed = doc["runs_ablations"][1];
  failed["ok"] = false;
  failed["error"] = "rank 1 exited with code 4";
  doc["ablations"].push_back({{"name", "no-overlap"}, {"devices", 2}, {"error", "rank 1 exited with code 4"}});
  doc["runs_ablations"].push_back(failed);
  const std::string html = render(doc);
  EXPECT_NE(html.find("failed: rank 1 exited with code 4"), std::string::npos);
}

// Effects as the doctor computes them from its runs' steady epochs: known for every ablation but
// the last, whose run recorded no spread. The baselines' epochs spread by 5 % and 7.5 %.
Json with_effects(Json doc) {
  const auto spread = [](Json& run, double relative_sd) {
    const double epoch = run["wall_seconds"].get<double>() / 200;
    run["summary"]["steady_epochs"] = {{"count", 199}, {"mean_seconds", epoch}, {"sd_seconds", relative_sd * epoch}};
  };
  spread(doc["runs"][0], 0.05);
  spread(doc["runs"][1], 0.075);
  for (std::size_t i = 0; i + 1 < doc["runs_ablations"].size(); ++i) spread(doc["runs_ablations"][i], 0.05);
  return doc;
}

TEST(ReportHtml, DrawsEachAblationsErrorBarOverItsBaselinesNoiseBand) {
  const std::string html = render(with_effects(load_fixture("seed_doctor.json")));
  const std::string chart = element_with_id(html, "effect-chart", "</figure>");
  ASSERT_FALSE(chart.empty());
  EXPECT_EQ(count(chart, "class=\"effect\""), 5u);      // every ablation that ran
  EXPECT_EQ(count(chart, "class=\"noise-band\""), 5u);  // each baseline recorded its spread
  EXPECT_EQ(count(chart, "class=\"error-bar\""), 4u);   // the last ablation's own noise is unknown
  EXPECT_NE(chart.find("</span>noise band: the baseline&#39;s ± (95 %)</li>"), std::string::npos);  // its legend
  EXPECT_NE(chart.find("</span>error bar: the effect&#39;s ± (95 %)</li>"), std::string::npos);
  // The axis is symmetric around zero and reaches the widest bar (46.4 %), on round ticks.
  const auto [lo, hi] = nice_range(-46.4, 46.4, 6);
  const double edge = std::max(-lo, hi);
  ASSERT_GE(edge, 46.4);
  EXPECT_NE(chart.find(fmt::format(">-{:.0f} %<", edge)), std::string::npos) << edge;
  EXPECT_NE(chart.find(fmt::format(">{:.0f} %<", edge)), std::string::npos);
  // Each band spans its ± (1.96 sd / sqrt(199) of the epochs) of the 370-pixel axis from -edge to +edge.
  const std::regex band(R"re(class="noise-band" x="[0-9.]+" y="[0-9.]+" width="([0-9.]+)")re");
  std::vector<double> widths;
  for (auto it = std::sregex_iterator(chart.begin(), chart.end(), band); it != std::sregex_iterator(); ++it)
    widths.push_back(std::stod((*it)[1]));
  ASSERT_EQ(widths.size(), 5u);
  const double one = 100 * 1.96 * 0.05 / std::sqrt(199.0), two = 100 * 1.96 * 0.075 / std::sqrt(199.0);
  EXPECT_NEAR(widths[0], 370 * 2 * one / (2 * edge), 0.1);
  EXPECT_NEAR(widths[1], 370 * 2 * two / (2 * edge), 0.1);
}

TEST(ReportHtml, TheAblationsTableShowsEachEffectAsTheDoctorDescribesIt) {
  const std::string html = render(with_effects(load_fixture("seed_doctor.json")));
  const std::string table = element_with_id(html, "ablations", "</table>");
  EXPECT_NE(table.find("<th>effect</th>"), std::string::npos);
  EXPECT_NE(table.find("<td>28.5 % slower (±"), std::string::npos) << table;
  EXPECT_NE(table.find("<td>-46.4 %, noise unknown: devices=2 batch-size=1024 recorded no spread of its epochs</td>"),
            std::string::npos)
      << table;
}

TEST(ReportHtml, AFailedAblationIsNoBarOfTheEffectChart) {
  Json doc = load_fixture("seed_doctor.json");
  for (std::size_t i = 1; i < doc["runs_ablations"].size(); ++i) {
    doc["runs_ablations"][i]["ok"] = false;
    doc["runs_ablations"][i]["error"] = "it failed";
  }
  const std::string chart = element_with_id(render(doc), "effect-chart", "</figure>");
  EXPECT_EQ(count(chart, "class=\"effect\""), 1u);
}

// The renderer formats a view and reads nothing else: one built by hand is a whole page.
TEST(ReportHtml, RendersAViewBuiltByHand) {
  ReportView view;
  view.kind = ReportKind::kDoctor;
  ReportRun one;
  one.label = "one";
  one.devices = 1;
  one.wall_seconds = 4;
  one.speedup = 1;
  ReportRun four = one;
  four.label = "four";
  four.devices = 4;
  four.wall_seconds = 2;
  four.speedup = 2;
  view.runs = {one, four};
  view.headline = HeadlineSpeedup{4, 2};
  view.measured_speedups = {{1, 1}, {4, 2}};
  view.findings.emplace();
  const std::string html = render_report_html(view);
  EXPECT_NE(html.find("<h1>Why are 4 devices only 2.00× faster than one?</h1>"), std::string::npos);
  EXPECT_NE(html.find("Speedup at 4 devices: <strong>2.00×</strong> (ideal 4×, parallel efficiency 50.0 %)"),
            std::string::npos);
  EXPECT_EQ(count(element_with_id(html, "speedup-chart", "</figure>"), "class=\"measured\""), 2u);
  EXPECT_NE(html.find("No rule fired"), std::string::npos);
  EXPECT_EQ(count(html, "id=\"ablations\""), 0u);
}

}  // namespace
}  // namespace ddp
