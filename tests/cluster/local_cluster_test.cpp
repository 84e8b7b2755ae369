// Multi-host runs on scripts/local-cluster (tests/support/local_cluster.h): equivalence,
// the host check, a cut and a slowed link, the probe on shaped links, the doctor.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <utility>

#include "doctor/allreduce_probe.h"
#include "doctor/scaling_model.h"
#include "support/local_cluster.h"
#include "support/run_command.h"
#include "support/sanitizer_build.h"

namespace ddp {
namespace {

namespace fs = std::filesystem;
using testing::kMpirun;
using testing::kScript;
using testing::kSmallSendBuffer;
using testing::LocalCluster;
using testing::shape;
using testing::summary;

TEST_F(LocalCluster, TwoHostsWithBatchBEqualOneRankWithBatch2B) {
  const std::string common = " train --max-epochs 3 --dataset-size 512 --progress-bar off --logger none";
  const fs::path two = testing::fresh_dir("cluster_two_hosts"), one = testing::fresh_dir("cluster_one_rank");
  const auto hosts = testing::run_command(kMpirun + DDPSCOPE_BINARY + common + " --batch-size 64 --num-nodes 2", two);
  ASSERT_EQ(hosts.exit_code, 0) << hosts.err;
  const auto single = testing::run_command(std::string(DDPSCOPE_BINARY) + common + " --batch-size 128", one);
  ASSERT_EQ(single.exit_code, 0) << single.err;
  const nlohmann::json a = summary(two), b = summary(one);
  EXPECT_EQ(a["hosts"], nlohmann::json({"ddpscope-h1", "ddpscope-h2"}));
  const double val_a = a["final"]["val_loss"], val_b = b["final"]["val_loss"];
  EXPECT_NEAR(val_a, val_b, 1e-5 * std::abs(val_b));
  EXPECT_NE(hosts.out.find("Profiler report (2 ranks on 2 hosts"), std::string::npos) << hosts.out;
}

TEST_F(LocalCluster, NumNodesIsCheckedAgainstTheRealHosts) {
  const auto run = testing::run_command(kMpirun + DDPSCOPE_BINARY + " train --max-epochs 1 --num-nodes 1",
                                        testing::fresh_dir("cluster_num_nodes"));
  EXPECT_EQ(run.exit_code, 2);
  EXPECT_NE(run.err.find("--num-nodes 1 but this job's 2 rank(s) run on 2 host(s); set --num-nodes 2"),
            std::string::npos)
      << run.err;
}

// The link of host 2 goes down mid-run: exit 4 within 30 s naming rank 1 and its host, no
// process left on either host, and the job resumes from its last checkpoint once healed.
TEST_F(LocalCluster, CutLinkEndsTheJobWithCode4NamingTheHostAndResumes) {
  const fs::path dir = testing::fresh_dir("cluster_cut");
  const std::string train =
      kMpirun + DDPSCOPE_BINARY + " train --num-nodes 2 --progress-bar off --checkpoint-every-n-epochs 1 --version 0";
  const std::string cut = "(sleep 8; " + kScript + " cut 2; date +%s.%N > cut_at) & ";
  const auto run =
      testing::run_command("{ " + cut + train + " --max-epochs 100000; echo $? > rc; date +%s.%N > end_at; }", dir);
  EXPECT_EQ(std::stoi(testing::read_text(dir / "rc")), 4) << run.err;
  const double seconds = std::stod(testing::read_text(dir / "end_at")) - std::stod(testing::read_text(dir / "cut_at"));
  EXPECT_LT(seconds, 30.0);
  EXPECT_NE(run.err.find("rank(s) 1 (on ddpscope-h2) stopped responding (hung, killed or cut off)"), std::string::npos)
      << run.err;
  std::string left;
  for (int tries = 0; tries < 50; ++tries) {
    left = testing::run_command("ip netns pids ddpscope-h1; ip netns pids ddpscope-h2", dir / "pids").out;
    if (left.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(left, "") << "processes left on the hosts";

  ASSERT_EQ(std::system((kScript + " heal 2").c_str()), 0);
  // The checkpoints are named epoch=E-step=S; resume from the last for 3 more steps.
  const fs::path checkpoints = dir / "ddpscope_logs/version_0/checkpoints";
  ASSERT_TRUE(fs::exists(checkpoints / "last.safetensors"));
  int64_t steps = 0;
  for (const auto& entry : fs::directory_iterator(checkpoints)) {
    const std::string name = entry.path().stem().string();
    if (name.rfind("epoch=", 0) == 0) steps = std::max<int64_t>(steps, std::stoll(name.substr(name.find("step=") + 5)));
  }
  const auto resumed = testing::run_command(
      kMpirun + DDPSCOPE_BINARY + " train --num-nodes 2 --progress-bar off --version 1 --max-epochs 100000" +
          " --max-steps " + std::to_string(steps + 3) + " --ckpt-path " + (checkpoints / "last.safetensors").string(),
      dir);
  EXPECT_EQ(resumed.exit_code, 0) << resumed.err;
  EXPECT_EQ(summary(dir, 1)["optimizer_steps"], steps + 3);
}

// Host 2's link drops to 20 Mbit/s once the first epoch is checkpointed: the job still
// ends with exit 0, and the wait shows in comm_wait. The bound is physical, not a timing:
// every allreduce after the shaping sends the gradient out of host 2 through that link, and
// half the time that takes at 20 Mbit/s is already far above an unshaped run's whole
// comm_wait. Which allreduces came after it is read from the checkpoints: the loop writes
// each epoch's checkpoint (atomically) before its next step, so every step after the first
// checkpoint missing from the listing taken once the link was shaped ran on the slow link.
TEST_F(LocalCluster, SlowedLinkShowsInCommWaitAndTheJobFinishes) {
  const fs::path dir = testing::fresh_dir("cluster_slow");
  const std::string train = kMpirun + DDPSCOPE_BINARY +
                            " train --num-nodes 2 --progress-bar off --max-epochs 1000 --max-steps 60"
                            " --dataset-size 1280 --checkpoint-every-n-epochs 1 --version 0";
  const std::string checkpoints = "ddpscope_logs/version_0/checkpoints/";
  const std::string slow = "(for i in $(seq 600); do ls " + checkpoints + "epoch=0-step=*.safetensors" +
                           " >/dev/null 2>&1 && break; sleep 0.05; done; " + kScript + " shape 2 20mbit; ls " +
                           checkpoints + " > shaped_after) & ";
  const auto run = testing::run_command("{ " + slow + train + "; echo $? > rc; wait; }", dir);
  ASSERT_EQ(std::stoi(testing::read_text(dir / "rc")), 0) << run.err;
  const std::string listed = testing::read_text(dir / "shaped_after");
  ASSERT_NE(listed.find("epoch=0-step="), std::string::npos) << "the first epoch never finished";
  int64_t unshaped_steps = -1;  // the step of the first checkpoint written after the shaping
  for (const auto& entry : fs::directory_iterator(dir / checkpoints)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("epoch=", 0) != 0 || listed.find(name) != std::string::npos) continue;
    const int64_t step = std::stoll(name.substr(name.find("step=") + 5));
    if (unshaped_steps < 0 || step < unshaped_steps) unshaped_steps = step;
  }
  const nlohmann::json s = summary(dir);
  const int64_t slowed_calls = s["allreduce"]["calls"].get<int64_t>() - unshaped_steps;
  ASSERT_TRUE(unshaped_steps > 0 && slowed_calls >= 10)
      << "the link was shaped too late to measure: " << unshaped_steps << " steps before it\n"
      << listed;
  const double bytes_per_call = s["allreduce"]["bytes"].get<double>() / s["allreduce"]["calls"].get<double>();
  const double link_seconds = slowed_calls * bytes_per_call * 8 / 20e6;
  EXPECT_GT(s["phases"]["comm_wait"].get<double>(), 0.5 * link_seconds);
  // The report's rows are sorted by total: comm_wait comes first.
  EXPECT_NE(run.out.find("-\ncomm_wait   |"), std::string::npos) << run.out;
}

// The doctor's allreduce probe across the two hosts, fitted as the doctor fits it, at sizes
// far past tbf's burst (half a millisecond at the rate, at least 64 KiB). Each host's
// outgoing link gets its own rate ("none": unshaped).
AllreduceFit probe_across_hosts(const std::string& rate1, const std::string& rate2,
                                const std::string& mpirun_options = "") {
  shape(rate1, rate2);
  const auto run = testing::run_command(
      kMpirun + mpirun_options + " " + DDPSCOPE_BINARY + " probe-allreduce --sizes 2097152,8388608",
      testing::fresh_dir("cluster_probe_" + rate1 + "_" + rate2));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json probe = nlohmann::json::parse(run.out);
  std::vector<ProbePoint> points;
  for (const auto& p : probe["points"]) {
    points.push_back({p["ranks"].get<int>(), p["bytes"].get<int64_t>(), p["seconds"].get<double>()});
  }
  return fit_allreduce(points);
}

// One direction shaped, the other free: the ring's two directions overlap, so beta is the
// shaped link's rate (measured 112-117 MB/s at 1 Gbit/s, 54-61 MB/s at 500 Mbit/s: TCP's
// payload is 95 % of the frames tbf counts; docs/interconnects.md).
TEST_F(LocalCluster, ProbeThroughOneShapedDirectionMeasuresItsRate) {
  for (const auto& [rate, bits] : {std::pair{"1gbit", 1e9}, std::pair{"500mbit", 5e8}}) {
    const double beta = probe_across_hosts(rate, "none").beta_bytes_per_second;
    if (!testing::kSanitizerBuild) EXPECT_NEAR(beta, bits / 8, 0.2 * bits / 8) << rate;
  }
  // Under ASan one CI-like run measured 64 % of 1 Gbit/s: the rate is the release build's to check.
  if (testing::kSanitizerBuild) GTEST_SKIP() << "the probe ran; its rate is checked in the release build";
}

// Both directions shaped, Open MPI's defaults: beta was 89-97 % of the cap on a quiet
// machine (110-113 MB/s at 1 Gbit/s, 60.4-60.6 MB/s at 500 Mbit/s) but 64 % at 500 Mbit/s
// beside the release suite, where each message's rendezvous reply waited behind the other
// direction's data in the kernel's send buffer (docs/interconnects.md). The check is the
// physics: under the cap, above a third of it, and far below the unshaped link.
TEST_F(LocalCluster, ProbeOnAShapedLinkMeasuresBetaUnderItsRate) {
  const double shaped = probe_across_hosts("1gbit", "1gbit").beta_bytes_per_second;
  const double unshaped = probe_across_hosts("none", "none").beta_bytes_per_second;
  const double cap = 1e9 / 8;
  EXPECT_LT(shaped, 1.2 * cap);
  EXPECT_GT(shaped, cap / 3);
  EXPECT_GT(unshaped, 2 * shaped);
}

// Both directions shaped, 32 KiB send buffers: the replies cannot wait long, and beta is the
// link's (measured 118.0-118.3 MB/s at 1 Gbit/s; 59.7 MB/s at 500 Mbit/s even with the old,
// larger token bucket, under which the defaults gave 37-40).
TEST_F(LocalCluster, ProbeWithSmallSendBuffersMeasuresTheRateOfBothShapedDirections) {
  for (const auto& [rate, bits] : {std::pair{"1gbit", 1e9}, std::pair{"500mbit", 5e8}}) {
    const double beta = probe_across_hosts(rate, rate, kSmallSendBuffer).beta_bytes_per_second;
    if (!testing::kSanitizerBuild) EXPECT_NEAR(beta, bits / 8, 0.2 * bits / 8) << rate;
  }
  if (testing::kSanitizerBuild) GTEST_SKIP() << "the probe ran; its rate is checked in the release build";
}

// doctor --mpirun-args with the local cluster's options: the 2-device runs and the allreduce
// probe span both hosts (the doctor itself runs in the launcher namespace, as mpirun must).
TEST_F(LocalCluster, DoctorComparesOneDeviceWithTwoHosts) {
  const fs::path dir = testing::fresh_dir("cluster_doctor");
  const auto run = testing::run_command("ip netns exec ddpscope-login " + std::string(DDPSCOPE_BINARY) +
                                            " doctor --devices 1,2 --num-nodes 2 --max-epochs 2 --dataset-size 1024"
                                            " --mpirun-args \"$(" +
                                            kScript + " options)\"",
                                        dir);
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  const fs::path root = dir / "ddpscope_logs/version_0";
  const nlohmann::json two = nlohmann::json::parse(testing::read_text(root / "runs/devices=2/summary.json"));
  EXPECT_EQ(two["hosts"], nlohmann::json({"ddpscope-h1", "ddpscope-h2"}));
  // The two namespace hosts run on one kernel, so one machine's cores: each rank is the
  // machine's own, not another process beside the other.
  ASSERT_EQ(two["host_load"].size(), 1u) << two.dump();
  EXPECT_EQ(two["host_load"][0]["host"], "ddpscope-h1 and ddpscope-h2");
  EXPECT_GT(two["host_load"][0]["ranks_cpu_seconds"].get<double>(), 0.0);
  const nlohmann::json doctor = nlohmann::json::parse(testing::read_text(root / "doctor.json"));
  EXPECT_FALSE(doctor["allreduce_probe"].empty()) << run.out;
  EXPECT_NE(run.out.find("Every mpirun started here took: --allow-run-as-root --hostfile"), std::string::npos)
      << run.out;
}

}  // namespace
}  // namespace ddp
