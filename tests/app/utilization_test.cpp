// Device utilization through real runs: every run, however short, has a start and an end
// sample everywhere it reports utilization; the per-step probe's readings are kept too.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/run_command.h"

namespace ddp {
namespace {

using testing::fresh_dir;
using testing::read_text;
using testing::run_command;

const std::string kBinary = DDPSCOPE_BINARY;

// The non-empty cells of metrics.csv's column `name`.
std::vector<double> csv_column(const std::string& csv, const std::string& name) {
  std::istringstream lines(csv);
  std::string header;
  std::getline(lines, header);
  std::vector<std::string> columns;
  std::stringstream header_cells(header);
  for (std::string cell; std::getline(header_cells, cell, ',');) columns.push_back(cell);
  std::vector<double> values;
  for (std::string row; std::getline(lines, row);) {
    std::stringstream cells(row);
    std::string cell;
    for (std::size_t i = 0; i < columns.size() && std::getline(cells, cell, ','); ++i) {
      if (columns[i] == name && !cell.empty()) values.push_back(std::stod(cell));
    }
  }
  return values;
}

void expect_percents(const std::vector<double>& values, const std::string& what) {
  for (double v : values) {
    EXPECT_GE(v, 0) << what;
    EXPECT_LE(v, 100) << what;
  }
}

// The case: 5 epochs on 2 devices end long before the monitor's first 100 ms tick.
TEST(Utilization, AShortRunHasItsStartAndEndSamplesInTraceSummaryAndMetrics) {
  const auto dir = fresh_dir("utilization_short");
  const auto r = run_command(kBinary + " train --devices 2 --max-epochs 5 --profiler trace --progress-bar off", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto run = dir / "ddpscope_logs/version_0";

  const auto trace = nlohmann::json::parse(read_text(run / "trace.json"));
  std::map<int, int> counters;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "C" && e["name"] == "device_" + std::to_string(e["pid"].get<int>()) + "_utilization") {
      ++counters[e["pid"].get<int>()];
    }
  }
  const auto summary = nlohmann::json::parse(read_text(run / "summary.json"));
  ASSERT_EQ(summary["utilization_per_rank"].size(), 2u);
  const std::string metrics = read_text(run / "metrics.csv");
  for (int rank = 0; rank < 2; ++rank) {
    const std::string name = "device_" + std::to_string(rank) + "_utilization";
    EXPECT_GE(counters[rank], 2) << "trace.json counters of rank " << rank;
    const auto& series = summary["utilization_per_rank"][rank];
    EXPECT_GE(series.size(), 2u) << series.dump();
    for (const auto& point : series) expect_percents({point[1].get<double>()}, "summary.json " + name);
    const std::vector<double> logged = csv_column(metrics, name);
    EXPECT_FALSE(logged.empty()) << metrics;
    expect_percents(logged, "metrics.csv " + name);
  }
}

// The seed preset's doctor baselines probe in every step: those readings are what its report plots.
TEST(Utilization, ThePerStepProbesReadingsReachTheSummaryThinned) {
  const auto dir = fresh_dir("utilization_per_step");
  // 12500 probes (about 0.4 s), more than the summary's 300 points per rank, over several windows of
  // kMinUtilizationWindow (a probe repeats its last reading until 50 ms have passed).
  const auto r = run_command(kBinary +
                                 " train --monitor-mode per-step --dataset-size 5000 --batch-size 8"
                                 " --hidden-size 8 --max-epochs 20 --progress-bar off",
                             dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto run = dir / "ddpscope_logs/version_0";
  const auto summary = nlohmann::json::parse(read_text(run / "summary.json"));
  const auto& series = summary["utilization_per_rank"][0];
  EXPECT_GE(series.size(), 2u) << series.dump();
  EXPECT_LE(series.size(), 300u);
  double previous = -1;
  for (const auto& point : series) {
    EXPECT_GT(point[0].get<double>(), previous) << series.dump();
    previous = point[0].get<double>();
    expect_percents({point[1].get<double>()}, "summary.json device_0_utilization");
  }
  const std::vector<double> logged = csv_column(read_text(run / "metrics.csv"), "device_0_utilization");
  EXPECT_FALSE(logged.empty());
  expect_percents(logged, "metrics.csv device_0_utilization");
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? -1 : v[v.size() / 2];
}

// A device is one core (--threads-per-device 1): one rank training flat out reads near 100 %
// whether or not it is pinned (it read 48-50 %, its share of the two cores it may run on), and a
// rank that waits for its loader reads its busy share: what its phases say it computed.
TEST(Utilization, OneBusyDeviceReadsFullAndAWaitingOneItsBusyShare) {
  for (const int delay_us : {0, 2500}) {
    const auto dir = fresh_dir("utilization_device_" + std::to_string(delay_us));
    const auto r = run_command("DDPSCOPE_LOADER_DELAY_US=" + std::to_string(delay_us) + " " + kBinary +
                                   " train --max-epochs 10 --check-val-every-n-epoch 100 --progress-bar off",
                               dir);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto summary = nlohmann::json::parse(read_text(dir / "ddpscope_logs/version_0/summary.json"));
    std::vector<double> readings;
    for (const auto& point : summary["utilization_per_rank"][0]) readings.push_back(point[1].get<double>());
    const double busy = 100 * (1 - summary["phases"]["data"].get<double>() / summary["wall_seconds"].get<double>());
    if (delay_us == 0) {
      EXPECT_GT(median(readings), 85) << summary["utilization_per_rank"].dump();
    } else {
      EXPECT_LT(busy, 80) << "the loader's delay makes the rank wait";
      EXPECT_NEAR(median(readings), busy, 15) << summary["utilization_per_rank"].dump();
    }
  }
}

TEST(Utilization, MonitorOffMeasuresNothing) {
  const auto dir = fresh_dir("utilization_off");
  const auto r = run_command(kBinary + " train --monitor-interval-ms 0 --max-epochs 2 --progress-bar off", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto run = dir / "ddpscope_logs/version_0";
  const auto summary = nlohmann::json::parse(read_text(run / "summary.json"));
  EXPECT_TRUE(summary["utilization_per_rank"][0].empty()) << summary["utilization_per_rank"].dump();
  EXPECT_EQ(read_text(run / "metrics.csv").find("utilization"), std::string::npos);
}

}  // namespace
}  // namespace ddp
