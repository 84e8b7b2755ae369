// The report in a real browser: Debian's headless Chromium loads report.html from disk, and the
// DOM it built and a screenshot are checked. Missing Chromium is a failure, never a skip.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "doctor/doctor_file.h"
#include "doctor/report_html.h"
#include "support/run_command.h"

namespace ddp {
namespace {

namespace fs = std::filesystem;

constexpr const char* kChromium = "/usr/bin/chromium";
// A cold start on two busy cores takes seconds; a minute means it hung.
constexpr int kBrowserTimeoutSeconds = 60;

using Json = nlohmann::ordered_json;

Json load_fixture(const std::string& name) {
  std::ifstream in(fs::path(__FILE__).parent_path() / "fixtures" / name);
  EXPECT_TRUE(in) << "missing fixture " << name;
  return Json::parse(in);
}

// The page of a document, read as doctor.json is.
std::string render(const Json& doc) { return render_report_html(read_doctor_result(doc, "fixture.json")); }

std::size_t count(const std::string& text, const std::string& needle) {
  std::size_t n = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

std::string attribute(const std::string& dom, const std::string& name) {
  std::smatch match;
  const std::regex pattern("<body[^>]*\\s" + name + "=\"([^\"]*)\"");
  return std::regex_search(dom, match, pattern) ? match[1].str() : std::string("(absent)");
}

class ReportBrowser : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs::exists(kChromium)) << kChromium
                                       << " not found: install Debian's Chromium with `apt-get install -y chromium` "
                                          "(the setup script installs it); this test needs a real browser.";
    dir_ = testing::fresh_dir("report_browser_" + std::to_string(::getpid()));
    Json doc = load_fixture("seed_doctor.json");
    // Had escaping failed, the browser would run this and mark the body.
    doc["config"]["name"] = "</td><script>document.body.dataset.injected='1'</script>";
    report_ = dir_ / "report.html";
    std::ofstream(report_) << render(doc);
  }

  // Every flag keeps the browser off the network and away from any shared profile.
  testing::CommandResult chromium(const std::string& action, const std::string& profile) {
    const std::string command = "timeout " + std::to_string(kBrowserTimeoutSeconds) + " " + kChromium +
                                " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                                " --disable-background-networking --disable-component-update --disable-sync"
                                " --user-data-dir='" +
                                (dir_ / profile).string() + "' " + action + " 'file://" + report_.string() + "'";
    return testing::run_command(command, dir_ / ("run_" + profile));
  }

  fs::path dir_, report_;
};

TEST_F(ReportBrowser, BuildsTheChartsSeriesAndFindingsInTheDom) {
  const testing::CommandResult result = chromium("--dump-dom", "profile_dom");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::string& dom = result.out;
  ASSERT_NE(dom.find("</html>"), std::string::npos) << "no DOM dumped; stderr:\n" << result.err;
  EXPECT_EQ(attribute(dom, "data-ready"), "1") << "the inline script did not run";
  EXPECT_EQ(attribute(dom, "data-series-count"), "2") << "one utilization series per device";
  EXPECT_EQ(attribute(dom, "data-finding-count"), "3");
  EXPECT_EQ(attribute(dom, "data-svg-count"), "5")
      << "speedup, phases, utilization and its 1-device comparison, the ablations' effects";
  EXPECT_EQ(attribute(dom, "data-injected"), "(absent)") << "text from the JSON ran as script";
  for (const char* id : {"speedup-chart", "phase-chart", "utilization-chart"}) {
    const std::size_t at = dom.find(std::string("id=\"") + id + "\"");
    ASSERT_NE(at, std::string::npos) << id;
    EXPECT_LT(dom.find("<svg", at), dom.find("</figure>", at)) << id << " has no svg";
  }
  EXPECT_EQ(count(dom, "<li class=\"finding\""), 3u);
  EXPECT_EQ(count(dom, "data-device=\"0\""), 2u) << "device 0 in the 2-device chart and in the 1-device comparison";
  EXPECT_EQ(count(dom, "data-device=\"1\""), 1u);
}

// The ablation chart as Chromium lays it out: no label or effect text reaches past the
// chart's edges and no two x-axis tick labels overlap, even for long names and effects.
TEST_F(ReportBrowser, TheAblationChartsTextsFitAndItsTicksDoNotOverlap) {
  Json doc = load_fixture("seed_doctor.json");
  // Every run's epochs spread by 5 %: each effect gets its error bar and its baseline's band.
  const auto spread = [](Json& run) {
    const double epoch = run["wall_seconds"].get<double>() / 200;
    run["summary"]["steady_epochs"] = {{"count", 199}, {"mean_seconds", epoch}, {"sd_seconds", 0.05 * epoch}};
  };
  for (Json& run : doc["runs"]) spread(run);
  for (Json& run : doc["runs_ablations"]) spread(run);
  doc["ablations"][1]["name"] = "sync-every-micro-batch-and-per-sample-data";
  // Measured by the browser after layout, into attributes of the body that the dump shows.
  const std::string measure = R"(<script>
const svg = document.querySelector('#effect-chart svg'), box = svg.viewBox.baseVal;
let clipped = 0, overlaps = 0;
for (const t of svg.querySelectorAll('text')) {
  const b = t.getBBox();
  if (b.x < box.x - 0.5 || b.x + b.width > box.x + box.width + 0.5) clipped++;
}
const ticks = [...svg.querySelectorAll('.x-axis .tick')].map(t => t.getBBox()).sort((p, q) => p.x - q.x);
for (let i = 1; i < ticks.length; i++) if (ticks[i].x < ticks[i - 1].x + ticks[i - 1].width + 2) overlaps++;
document.body.dataset.clippedTexts = clipped;
document.body.dataset.overlappingTicks = overlaps;
document.body.dataset.ticks = ticks.length;
</script></body>)";
  std::string html = render(doc);
  html.replace(html.rfind("</body>"), 7, measure);
  std::ofstream(report_) << html;
  const testing::CommandResult result = chromium("--dump-dom", "profile_chart");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(attribute(result.out, "data-clipped-texts"), "0");
  EXPECT_EQ(attribute(result.out, "data-overlapping-ticks"), "0");
  EXPECT_GE(std::atoi(attribute(result.out, "data-ticks").c_str()), 3) << "an axis needs ticks to be read";
}

TEST_F(ReportBrowser, RendersAScreenshot) {
  const fs::path png = dir_ / "output" / "report.png";
  fs::create_directories(png.parent_path());
  const testing::CommandResult result =
      chromium("--hide-scrollbars --window-size=1280,2400 --screenshot='" + png.string() + "'", "profile_png");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  ASSERT_TRUE(fs::exists(png)) << result.err;
  EXPECT_GT(fs::file_size(png), 10'000u) << "a blank page compresses to almost nothing";
  std::ifstream in(png, std::ios::binary);
  std::string signature(8, '\0');
  in.read(signature.data(), 8);
  EXPECT_EQ(signature, std::string("\x89PNG\r\n\x1a\n", 8));

  // Kept beside the test binary too, where a person looks after a run.
  const fs::path kept = fs::read_symlink("/proc/self/exe").parent_path() / "report_browser_test_output";
  fs::create_directories(kept);
  fs::copy_file(png, kept / "report.png", fs::copy_options::overwrite_existing);
  fs::copy_file(report_, kept / "report.html", fs::copy_options::overwrite_existing);
  std::printf("screenshot: %s (copy: %s)\n", png.c_str(), (kept / "report.png").c_str());
}

}  // namespace
}  // namespace ddp
