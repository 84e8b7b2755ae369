// The sizes the seed's author tried, read as N devices against one at that size.
#include "doctor/size_speedup.h"

#include <gtest/gtest.h>

#include "doctor/doctor_result.h"
#include "doctor/report_html.h"
#include "doctor/report_view.h"

namespace ddp {
namespace {

RunRecord run(int devices, double wall, int64_t samples = 1000000, bool ok = true) {
  RunRecord r;
  r.label = "devices=" + std::to_string(devices);
  r.devices = devices;
  r.ok = ok;
  r.wall_seconds = wall;
  r.summary.wall_seconds = wall;
  r.summary.train_samples = samples;
  if (!ok) r.error = "exit 4";
  return r;
}

AblationResult ablation(const std::string& name, RunRecord r, const RunRecord& baseline) {
  r.label += " " + name;
  return {name, "", "", std::nullopt, std::move(r), &baseline};
}

TEST(SizeSpeedup, ASizeIsReadAsNDevicesAgainstOneBesideTheBaselines) {
  const std::vector<RunRecord> runs = {run(1, 6.86), run(2, 8.0)};
  std::vector<AblationResult> ablations = {ablation("width=1024", run(1, 94.81), runs[0]),
                                           ablation("width=1024", run(2, 50.0, 2000000), runs[1]),
                                           ablation("loader-workers=1", run(1, 6.0), runs[0])};
  const std::vector<SizeSpeedup> sizes = size_speedups(ablations, runs);
  ASSERT_EQ(sizes.size(), 1u);  // the habit is no size
  const SizeSpeedup& s = sizes[0];
  EXPECT_EQ(s.name, "width=1024");
  EXPECT_EQ(s.devices, 2);
  EXPECT_NEAR(s.speedup, 94.81 / 50.0, 1e-12);
  EXPECT_NEAR(s.baseline_speedup, 6.86 / 8.0, 1e-12);
  EXPECT_NEAR(s.samples_per_second, 2000000 / 50.0, 1e-9);
  EXPECT_EQ(describe(s),
            "width=1024: 2 devices beat 1 at 1.90x (the baseline: 0.86x); 94.81 s on 1, 50.00 s on 2, "
            "40000 samples/s");
}

TEST(SizeSpeedup, AFailedRunOfThePairGivesNoNumbers) {
  const std::vector<RunRecord> runs = {run(1, 6.86), run(2, 8.0)};
  std::vector<AblationResult> ablations = {ablation("layers+8", run(1, 20.0), runs[0]),
                                           ablation("layers+8", run(2, 0, 0, false), runs[1])};
  const std::vector<SizeSpeedup> sizes = size_speedups(ablations, runs);
  ASSERT_EQ(sizes.size(), 1u);
  EXPECT_EQ(describe(sizes[0]), "layers+8: devices=2 layers+8 failed");
}

TEST(SizeSpeedup, TheReportShowsSizesAsSpeedupsAndNotAsWallChanges) {
  DoctorResult result;
  result.ablations_run = true;
  result.runs = {run(1, 6.86), run(2, 8.0)};
  result.ablations.push_back(ablation("width=1024", run(1, 94.81), result.runs[0]));
  result.ablations.push_back(ablation("width=1024", run(2, 50.0, 2000000), result.runs[1]));
  result.ablations.push_back(ablation("loader-workers=1", run(1, 6.0), result.runs[0]));
  result.size_speedups = size_speedups(result.ablations, result.runs);
  const ReportView view = build_report_view(result);
  ASSERT_TRUE(view.ablations.has_value());
  ASSERT_EQ(view.ablations->size(), 1u);
  EXPECT_EQ(view.ablations->front().name, "loader-workers=1");
  const std::string html = render_report_html(view);
  EXPECT_NE(html.find("<h3>The sizes tried: N devices against one</h3>"), std::string::npos);
  EXPECT_NE(html.find("<td>width=1024</td><td class=\"num\">2</td>"), std::string::npos);
}

}  // namespace
}  // namespace ddp
