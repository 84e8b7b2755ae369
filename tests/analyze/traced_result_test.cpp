// A traced job's answer is the doctor's: its run read from the traces, written by the doctor's
// writer, read back by the doctor's one reader, and drawn by the doctor's report.
#include <gtest/gtest.h>

#include "analyze/trace_analysis.h"
#include "doctor/doctor_file.h"
#include "doctor/report_html.h"

namespace ddp {
namespace {

TraceAnalysis slow_forward_job() {
  const std::string traces = std::string(DDPSCOPE_SOURCE_DIR) + "/tests/analyze/fixtures/torch2_gloo_slow_forward";
  TraceAnalysis a = analyze_job(read_job(trace_files({traces}), {}));
  a.result.command = "ddpscope analyze torch2_gloo_slow_forward";
  return a;
}

TEST(TracedResult, TheTracedJobIsTheDoctorsRunWithWhatTracesCannotSayNamed) {
  const TraceAnalysis a = slow_forward_job();
  ASSERT_EQ(a.result.source, RunSource::kTraces);
  ASSERT_EQ(a.result.runs.size(), 1u);
  const RunRecord& run = a.record();
  EXPECT_EQ(run.ranks, (std::vector<int>{0, 1}));
  EXPECT_EQ(run.summary.phases_per_rank.size(), 2u);
  // The arrival chart's series: one per rank, per step.
  ASSERT_EQ(run.summary.arrivals.lag_ms_per_rank.size(), 2u);
  EXPECT_EQ(run.summary.arrivals.lag_ms_per_rank[0].size(), static_cast<std::size_t>(a.collectives->steps));

  const nlohmann::ordered_json j = to_json(a);
  EXPECT_EQ(j["schema"], "ddpscope.analyze/1");
  EXPECT_EQ(j["source"], "traces");
  EXPECT_TRUE(j["config"].is_null());
  EXPECT_EQ(j["setup"]["world size"], "2");
  EXPECT_EQ(j["runs"][0]["not_in_the_traces"].size(), kNotInTraces.size());
  EXPECT_EQ(j["findings"].size(), a.result.findings.size());
  for (const auto& row : j["predictions"]) {
    EXPECT_EQ(row["per"], "step");
    EXPECT_TRUE(row["batch_size"].is_null()) << "a trace does not know the batch";
  }
  // The per-step rows carry the traced point's measured step.
  int measured = 0;
  for (const auto& row : j["predictions"]) measured += row["measured_wall_seconds"].is_number();
  EXPECT_EQ(measured, 1);
}

TEST(TracedResult, ComesBackFromItsJsonThroughTheDoctorsOneReaderAndDrawsTheSamePage) {
  const TraceAnalysis a = slow_forward_job();
  const DoctorResult back = read_doctor_result(to_json(a), "analysis.json");
  EXPECT_EQ(back.source, RunSource::kTraces);
  EXPECT_EQ(to_json(back).dump(), to_json(a.result).dump());
  EXPECT_EQ(render_report_html(back), render_report_html(a.result));

  const std::string html = render_report_html(a.result);
  EXPECT_NE(html.find("ddpscope analyze report"), std::string::npos);
  EXPECT_NE(html.find("<h3>Not in the traces</h3>"), std::string::npos);
  for (const std::string what : kNotInTraces) EXPECT_NE(html.find(what.substr(0, 10)), std::string::npos) << what;
  EXPECT_NE(html.find("<dt>rank 1</dt>"), std::string::npos) << "each rank's file in the setup";
  EXPECT_NE(html.find("data-rank=\"1\""), std::string::npos) << "an arrival line per rank";
}

TEST(TracedResult, TheReaderRefusesAnAnalysisThatSaysItIsTheEngines) {
  const TraceAnalysis a = slow_forward_job();
  nlohmann::ordered_json j = to_json(a);
  j["source"] = "engine";
  try {
    (void)read_doctor_result(j, "analysis.json");
    FAIL() << "read";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()),
              "analysis.json is analyze's (schema \"ddpscope.analyze/1\") but its field \"source\" is \"engine\", "
              "expected \"traces\"");
  }
  j = to_json(a);
  j["runs"][0]["ranks"] = {0};
  try {
    (void)read_doctor_result(j, "analysis.json");
    FAIL() << "read";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()),
              "analysis.json runs[0] has 1 \"ranks\" and 2 \"phases_per_rank\", expected one for each rank");
  }
}

}  // namespace
}  // namespace ddp
