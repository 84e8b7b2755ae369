// The finding that separates ranks slowing each other's compute (sharing a host) from the
// network, on runs whose phases are given.
#include "doctor/findings.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ddp {
namespace {

RunRecord run_with(int devices, double wall, double forward, double backward, const std::vector<std::string>& hosts) {
  RunRecord run;
  run.label = "devices=" + std::to_string(devices);
  run.devices = devices;
  run.ok = true;
  run.summary.config = Config{};  // the defaults: the seed's
  run.wall_seconds = wall;
  PhaseSeconds phases{};
  phases[static_cast<std::size_t>(Phase::kForward)] = forward;
  phases[static_cast<std::size_t>(Phase::kBackward)] = backward;
  run.summary.world_size = devices;
  run.summary.wall_seconds = wall;
  run.summary.hosts = hosts;
  run.summary.phases_per_rank.assign(devices, phases);
  return run;
}

const Finding* sharing_finding(const std::vector<Finding>& findings) {
  for (const Finding& f : findings) {
    if (f.title.rfind("Ranks slow each other's compute", 0) == 0) return &f;
  }
  return nullptr;
}

TEST(Findings, RanksComputingMoreThanTheirShareOfOneDeviceAreNamedApartFromTheNetwork) {
  const RunRecord one = run_with(1, 1.0, 0.3, 0.5, {"node1"});
  // Each of 2 ranks should compute 0.4 s; they take 0.5 s: 0.1 s of a 0.6 s run.
  const RunRecord two = run_with(2, 0.6, 0.2, 0.3, {"node1", "node2"});
  FindingInputs in;
  in.device_runs = {&one, &two};
  const std::vector<Finding> findings = find_problems(in);
  const Finding* f = sharing_finding(findings);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "Ranks slow each other's compute by 0.10 s at 2 devices: 17 % of the run");
  EXPECT_NE(f->detail.find("took 0.500 s per rank on 2 hosts (node1, node2), against 0.400 s for a 1/2 share"),
            std::string::npos)
      << f->detail;
  EXPECT_NE(f->detail.find("This is not the network"), std::string::npos) << f->detail;
}

TEST(Findings, RanksComputingTheirShareGetNoSharingFinding) {
  const RunRecord one = run_with(1, 1.0, 0.3, 0.5, {"node1"});
  const RunRecord two = run_with(2, 0.6, 0.15, 0.25, {"node1"});
  FindingInputs in;
  in.device_runs = {&one, &two};
  const std::vector<Finding> findings = find_problems(in);
  EXPECT_EQ(sharing_finding(findings), nullptr);
}

// A difference within the two runs' noise (their steady epochs' spread) is no finding: 0.1 s
// beyond the share, against a band of 1.96 * hypot(0.1, 0.15 / 2) = 0.245 s.
TEST(Findings, RanksSlowerWithinTheRunsNoiseGetNoSharingFinding) {
  RunRecord one = run_with(1, 1.0, 0.3, 0.5, {"node1"});
  RunRecord two = run_with(2, 0.6, 0.2, 0.3, {"node1"});
  one.summary.steady_epochs = {.count = 10, .mean_seconds = 0.1, .sd_seconds = 0.0474};   // se 0.15 s of the wall
  two.summary.steady_epochs = {.count = 10, .mean_seconds = 0.06, .sd_seconds = 0.0316};  // se 0.1 s of the wall
  FindingInputs in;
  in.device_runs = {&one, &two};
  EXPECT_EQ(sharing_finding(find_problems(in)), nullptr);
  // The same runs, ten times steadier: the 0.1 s stands out, and its band is said.
  one.summary.steady_epochs.sd_seconds /= 10;
  two.summary.steady_epochs.sd_seconds /= 10;
  const std::vector<Finding> findings = find_problems(in);
  const Finding* f = sharing_finding(findings);
  ASSERT_NE(f, nullptr);
  EXPECT_GT(f->cost_uncertainty_seconds, 0);
  EXPECT_LT(f->cost_uncertainty_seconds, 0.1);
  EXPECT_NE(f->detail.find("The two runs' noise: ±0.0"), std::string::npos) << f->detail;
}

}  // namespace
}  // namespace ddp
