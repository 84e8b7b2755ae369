// On a GPU machine: `ddpscope train --accelerator cuda` against the same run on CPU (the
// losses it logs, its final parameters), with and without CUDA graphs, on the random and
// teacher datasets and a CSV file; a GPU run's checkpoint resumed on CPU; a diverging run
// stopped with the CPU's own message; auto training on the GPU and saying so; GPU ranks
// (sharing the GPU where there is one) against CPU ranks, and one of them killed. Skipped
// where no GPU is visible.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gpu_test_support.h"
#include "io/safetensors.h"
#include "support/cli_fault.h"
#include "support/run_command.h"

namespace ddp {
namespace {

namespace fs = std::filesystem;
using testing::fresh_dir;
using testing::read_text;
using testing::run_command;

// 1000 samples in micro-batches of 64 (the last of 40), 3 to a step: 6 steps an epoch, the
// last of one micro-batch; a loss row every step, validation every epoch.
const std::string kRun =
    " train --dataset-size 1000 --batch-size 64 --accumulate-grad-batches 3 --hidden-size 64 --max-epochs 3"
    " --log-every-n-steps 1 --progress-bar off --logger csv";

// A named --version is the run folder's name itself, as Lightning's.
fs::path run_folder(const fs::path& dir, const std::string& version) { return dir / "ddpscope_logs" / version; }

testing::CommandResult train(const fs::path& dir, const std::string& version, const std::string& args) {
  return run_command(testing::ddpscope_binary() + kRun + " --version " + version + " " + args, dir);
}

// A column of metrics.csv: its non-empty cells, in order.
std::vector<double> column(const fs::path& folder, const std::string& name) {
  std::istringstream csv(read_text(folder / "metrics.csv"));
  std::string line, cell;
  std::getline(csv, line);
  std::vector<std::string> header;
  for (std::istringstream cells(line); std::getline(cells, cell, ',');) header.push_back(cell);
  const auto at = std::find(header.begin(), header.end(), name) - header.begin();
  std::vector<double> values;
  while (std::getline(csv, line)) {
    std::istringstream cells(line);
    for (int64_t i = 0; std::getline(cells, cell, ','); ++i) {
      if (i == at && !cell.empty()) values.push_back(std::stod(cell));
    }
  }
  return values;
}

std::vector<float> final_params(const fs::path& folder) {
  std::vector<float> all;
  for (const Tensor& t : read_safetensors(folder / "final.safetensors").tensors) {
    const std::vector<float> values = t.values<float>();
    all.insert(all.end(), values.begin(), values.end());
  }
  return all;
}

void expect_same_run(const fs::path& gpu, const fs::path& cpu, double tolerance) {
  for (const std::string name : {"train_loss", "val_loss"}) {
    const std::vector<double> a = column(gpu, name), b = column(cpu, name);
    ASSERT_EQ(a.size(), b.size()) << name;
    ASSERT_FALSE(b.empty()) << name;
    for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], tolerance * b[i]) << name << " row " << i;
  }
  const std::vector<float> a = final_params(gpu), b = final_params(cpu);
  ASSERT_EQ(a.size(), b.size());
  double largest = 0;
  for (const float value : b) largest = std::max(largest, std::abs(static_cast<double>(value)));
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], tolerance * largest) << "param " << i;
}

TEST(TrainerGpu, ARunOnCudaLogsTheCpusLossesAndEndsAtItsParameters) {
  DDP_REQUIRE_GPU();
  const fs::path dir = fresh_dir("trainer_gpu_same");
  const auto cpu = train(dir, "cpu", "--accelerator cpu");
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  for (const std::string version : {"graph", "eager"}) {
    const auto gpu =
        train(dir, version, version == "graph" ? "--accelerator cuda" : "--accelerator cuda --no-cuda-graph");
    ASSERT_EQ(gpu.exit_code, 0) << gpu.err;
    expect_same_run(run_folder(dir, version), run_folder(dir, "cpu"), 1e-4);
    const nlohmann::json summary = nlohmann::json::parse(read_text(run_folder(dir, version) / "summary.json"));
    EXPECT_EQ(summary["accelerator"], "cuda");
    EXPECT_EQ(summary["optimizer_steps"], 18);
    // The FLOP share's denominator is the GPU's measured GEMM peak: more than 1 TFLOP/s in fp32
    // on any GPU of compute capability 8 or newer, out of a CPU core's reach (about 0.2).
    EXPECT_GT(summary["throughput"]["gemm_peak_flops_per_second_per_device"].get<double>(), 1e12);
  }
}

// The teacher's learnable task and a CSV file's rows train on the GPU as on CPU.
TEST(TrainerGpu, TeacherAndCsvDataTrainOnCudaAsOnCpu) {
  DDP_REQUIRE_GPU();
  const fs::path dir = fresh_dir("trainer_gpu_data");
  {
    std::ofstream csv(dir / "rows.csv");
    for (int r = 0; r < 1000; ++r) {
      for (int i = 0; i < 10; ++i) csv << std::sin(0.37 * r + i) << ",";
      csv << std::cos(0.11 * r) << "\n";
    }
  }
  for (const std::string data : {"teacher", "csv:rows.csv"}) {
    const std::string name = data == "teacher" ? "teacher" : "csv";
    const auto cpu = train(dir, name + "_cpu", "--accelerator cpu --data " + data);
    ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
    const auto gpu = train(dir, name + "_gpu", "--accelerator cuda --data " + data);
    ASSERT_EQ(gpu.exit_code, 0) << gpu.err;
    expect_same_run(run_folder(dir, name + "_gpu"), run_folder(dir, name + "_cpu"), 1e-4);
  }
}

// TF32 and bf16 products train the same run within their rounding (1e-3 and 1e-2 of the losses).
TEST(TrainerGpu, TheTensorCorePrecisionsTrainTheCpusRunWithinTheirRounding) {
  DDP_REQUIRE_GPU();
  const fs::path dir = fresh_dir("trainer_gpu_precision");
  const auto cpu = train(dir, "cpu", "--accelerator cpu");
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  for (const auto& [precision, tolerance] : {std::pair{"tf32", 1e-3}, std::pair{"bf16-mixed", 1e-2}}) {
    const auto gpu = train(dir, precision, std::string("--accelerator cuda --precision ") + precision);
    ASSERT_EQ(gpu.exit_code, 0) << gpu.err;
    for (const std::string name : {"train_loss", "val_loss"}) {
      const std::vector<double> a = column(run_folder(dir, precision), name), b = column(run_folder(dir, "cpu"), name);
      ASSERT_EQ(a.size(), b.size()) << precision << " " << name;
      for (std::size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], tolerance * b[i]) << precision << " " << i;
    }
  }
}

// Stopped by --max-steps inside the second epoch on the GPU, resumed on CPU from its last
// checkpoint (the first epoch's): the run ends where one that trained on CPU throughout ends.
TEST(TrainerGpu, AGpuCheckpointResumesOnCpu) {
  DDP_REQUIRE_GPU();
  const fs::path dir = fresh_dir("trainer_gpu_resume");
  const auto first = train(dir, "gpu", "--accelerator cuda --max-steps 8 --checkpoint-every-n-epochs 1");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  const fs::path last = run_folder(dir, "gpu") / "checkpoints/last.safetensors";
  ASSERT_TRUE(fs::exists(last)) << first.err;
  const auto resumed = train(dir, "resumed", "--accelerator cpu --ckpt-path " + last.string());
  ASSERT_EQ(resumed.exit_code, 0) << resumed.err;
  const auto cpu = train(dir, "cpu", "--accelerator cpu");
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  const std::vector<double> a = column(run_folder(dir, "resumed"), "val_loss"),
                            b = column(run_folder(dir, "cpu"), "val_loss");
  ASSERT_FALSE(a.empty());
  ASSERT_FALSE(b.empty());
  EXPECT_NEAR(a.back(), b.back(), 1e-4 * b.back());
}

TEST(TrainerGpu, ADivergingRunStopsWithTheCpusMessage) {
  DDP_REQUIRE_GPU();
  const fs::path dir = fresh_dir("trainer_gpu_diverge");
  const std::string diverging = " --optimizer sgd --lr 1e30";
  const auto cpu = train(dir, "cpu", "--accelerator cpu" + diverging);
  const auto gpu = train(dir, "gpu", "--accelerator cuda" + diverging);
  EXPECT_EQ(cpu.exit_code, 1) << cpu.err;
  EXPECT_EQ(gpu.exit_code, 1) << gpu.err;
  const auto message = [](const std::string& err) {
    return err.substr(0, err.find(" is ")) + err.substr(err.find(" at epoch"));
  };
  ASSERT_NE(cpu.err.find("training loss is"), std::string::npos) << cpu.err;
  ASSERT_NE(gpu.err.find("training loss is"), std::string::npos) << gpu.err;
  EXPECT_EQ(message(gpu.err), message(cpu.err));  // the same epoch, batch and step (inf or nan alike)
}

TEST(TrainerGpu, AutoTrainsOnTheGpuAndSaysSo) {
  DDP_REQUIRE_GPU();
  std::string reason;
  const GpuDevice& gpu = *testing::first_gpu(reason);
  const fs::path dir = fresh_dir("trainer_gpu_auto");
  const auto r = train(dir, "auto", "--accelerator auto");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("GPU available: " + gpu.name), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("; using cuda"), std::string::npos) << r.err;
  const nlohmann::json summary = nlohmann::json::parse(read_text(run_folder(dir, "auto") / "summary.json"));
  EXPECT_EQ(summary["accelerator"], "cuda");
  // More ranks than GPUs: auto trains them on CPU, saying why (cuda would share the GPUs).
  const int ranks = static_cast<int>(visible_gpus().devices.size()) + 1;
  const auto more = train(dir, "more", "--accelerator auto --max-epochs 1 --devices " + std::to_string(ranks));
  ASSERT_EQ(more.exit_code, 0) << more.err;
  EXPECT_NE(more.err.find("wants a GPU per rank"), std::string::npos) << more.err;
  EXPECT_NE(more.err.find("; using cpu"), std::string::npos) << more.err;
}

// DDP and ZeRO-1 on GPU ranks (over NCCL with a GPU per rank, else through host
// memory; on one GPU the ranks share it): the same losses and parameters as the same ranks on CPU, and as
// one rank with the ranks' batch together.
TEST(TrainerGpu, TwoGpuRanksTrainAsTwoCpuRanksAndAsOneRankWithTheirBatchWithDdpAndZero1) {
  DDP_REQUIRE_GPU();
  const fs::path dir = fresh_dir("trainer_gpu_ranks");
  const std::string two_ranks = "--devices 2 --no-shuffle";
  const auto cpu = train(dir, "cpu", "--accelerator cpu " + two_ranks);
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  const auto gpu = train(dir, "gpu", "--accelerator cuda " + two_ranks);
  ASSERT_EQ(gpu.exit_code, 0) << gpu.err;
  const bool gpu_per_rank = visible_gpus().devices.size() >= 2;
  EXPECT_NE(gpu.err.find(gpu_per_rank ? "NCCL averages the gradients on the GPUs"
                                      : "gradients travel through host memory over MPI"),
            std::string::npos)
      << gpu.err;
  expect_same_run(run_folder(dir, "gpu"), run_folder(dir, "cpu"), 1e-4);
  const nlohmann::json summary = nlohmann::json::parse(read_text(run_folder(dir, "gpu") / "summary.json"));
  EXPECT_EQ(summary["accelerator"], "cuda");
  EXPECT_EQ(summary["world_size"], 2);
  EXPECT_EQ(summary["gradient_transport"], gpu_per_rank ? "nccl" : "mpi");
  // ZeRO-1 on the same ranks: each updates its half of the parameters, the same mathematics.
  const auto zero1 = train(dir, "zero1", "--accelerator cuda --strategy ddp_zero1 " + two_ranks);
  ASSERT_EQ(zero1.exit_code, 0) << zero1.err;
  expect_same_run(run_folder(dir, "zero1"), run_folder(dir, "cpu"), 1e-4);
  // One rank with batch 128 follows the two ranks' mathematics (DDP averages their gradients).
  const auto one = train(dir, "one", "--accelerator cuda --devices 1 --no-shuffle --batch-size 128");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  const std::vector<float> a = final_params(run_folder(dir, "gpu")), b = final_params(run_folder(dir, "one"));
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-4) << "param " << i;
}

// A NCCL world of one, the NCCL path on a machine with one GPU: each bucket's allreduce (a
// bucket per layer here, or one for all with --no-overlap) started in the last backward on a
// stream of its own and joined before the optimizer, in the step's graph and eagerly, leaves
// the one-GPU run's training as it was.
TEST(TrainerGpu, ANcclWorldOfOneTrainsAsOneGpuDoesInGraphsAndEagerly) {
  DDP_REQUIRE_GPU();
  const fs::path dir = fresh_dir("trainer_gpu_nccl1");
  const auto plain = train(dir, "plain", "--accelerator cuda");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const std::string nccl = "--accelerator cuda --process-group-backend nccl ";
  for (const auto& [version, args] : std::vector<std::pair<std::string, std::string>>{
           {"per_layer", nccl + "--bucket-cap-mb 0.000001"},
           {"per_layer_eager", nccl + "--bucket-cap-mb 0.000001 --no-cuda-graph"},
           {"one_bucket", nccl + "--no-overlap"}}) {
    const auto r = train(dir, version, args);
    ASSERT_EQ(r.exit_code, 0) << version << ": " << r.err;
    EXPECT_NE(r.err.find("NCCL averages the gradients on the GPUs"), std::string::npos) << r.err;
    expect_same_run(run_folder(dir, version), run_folder(dir, "plain"), 1e-6);
    const nlohmann::json summary = nlohmann::json::parse(read_text(run_folder(dir, version) / "summary.json"));
    EXPECT_EQ(summary["gradient_transport"], "nccl");
  }
}

// NCCL takes one rank per GPU: asked for with more ranks than GPUs, it is refused before
// training (exit 2), saying why and what to use; auto takes host memory instead.
TEST(TrainerGpu, NcclForRanksSharingAGpuIsRefusedWithCode2) {
  DDP_REQUIRE_GPU();
  const fs::path dir = fresh_dir("trainer_gpu_nccl_shared");
  const std::string ranks = std::to_string(visible_gpus().devices.size() + 1);
  const auto r = train(dir, "shared", "--accelerator cuda --process-group-backend nccl --devices " + ranks);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("NCCL takes one rank per GPU; use --process-group-backend mpi"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(run_folder(dir, "shared") / "final.safetensors"));
}

// A GPU rank killed mid-training ends the job as a CPU rank does: exit 4 within bounded
// time, naming the rank, nothing left behind (sharing a GPU, the ranks meet in MPI, under
// the watchdog, at every step; over NCCL, at every read of the losses).
TEST(TrainerGpu, AKilledGpuRankEndsTheJobWithCode4NamingIt) {
  DDP_REQUIRE_GPU();
  const testing::CliFault run =
      testing::run_with_fault(SIGKILL, "trainer_gpu_kill", testing::ddpscope_binary(), {"--accelerator", "cuda"});
  EXPECT_EQ(run.exit_code, 4) << run.err;
  EXPECT_LT(run.seconds_after_fault, 30.0);
  EXPECT_NE(run.err.find("ddpscope: error: rank 1 (on "), std::string::npos) << run.err;
  testing::expect_no_survivors(run.marker);
}

}  // namespace
}  // namespace ddp
