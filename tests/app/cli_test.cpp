// The command line as a user meets it: exit codes and the messages of every bad input.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "gpu/visible_gpus.h"
#include "support/run_command.h"

namespace ddp {
namespace {

using testing::fresh_dir;
using testing::read_text;
using testing::run_command;

const std::string kBinary = DDPSCOPE_BINARY;
// Small and fast; no progress bar.
const std::string kQuick = " --dataset-size 64 --batch-size 16 --hidden-size 8 --max-epochs 2 --progress-bar off";

testing::CommandResult train(const std::string& args, const std::string& test) {
  return run_command(kBinary + " train" + kQuick + " " + args, fresh_dir(test));
}

void expect_usage_error(const std::string& args, const std::string& message, const std::string& test) {
  const auto r = train(args, test);
  EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
  EXPECT_NE(r.err.find(message), std::string::npos) << "for " << args << " stderr was:\n" << r.err;
}

TEST(Cli, TrainRunsAndPrintsTheSeedsLineLast) {
  const auto r = train("", "train_ok");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string last = r.out.substr(r.out.rfind("Training completed in"));
  EXPECT_TRUE(last.starts_with("Training completed in ")) << r.out;
  EXPECT_TRUE(last.ends_with(" seconds\n")) << r.out;
}

TEST(Cli, VersionAndHelp) {
  const auto version = run_command(kBinary + " --version", fresh_dir("version"));
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_NE(version.out.find("ddpscope "), std::string::npos);
  const auto help = run_command(kBinary + " train --help", fresh_dir("help"));
  EXPECT_EQ(help.exit_code, 0);
  for (const char* option : {"--batch-size", "--accumulate-grad-batches", "--no-shuffle", "--preset", "--config"}) {
    EXPECT_NE(help.out.find(option), std::string::npos) << option;
  }
}

TEST(Cli, BadOptionValuesExitTwoNamingOptionValueAndWhatIsAccepted) {
  expect_usage_error("--batch-size 0", "--batch-size: '0' is not accepted; expected an integer >= 1", "bad_batch");
  expect_usage_error("--hidden-size -3", "--hidden-size: '-3' is not accepted", "bad_hidden");
  expect_usage_error("--dataset-size abc", "--dataset-size: 'abc' is not accepted", "bad_size");
  expect_usage_error("--lr 0", "--lr: '0' is not accepted; expected a number > 0", "bad_lr");
  expect_usage_error("--lr -1e-3", "--lr: '-1e-3' is not accepted", "bad_lr_neg");
  expect_usage_error("--optimizer rmsprop", "--optimizer: 'rmsprop' is not accepted; expected one of adam, adamw, sgd",
                     "bad_opt");
  expect_usage_error("--betas 0.9", "--betas: '0.9' is not accepted; expected two numbers", "bad_betas");
  expect_usage_error("--betas 0.9,1.5", "--betas: '0.9,1.5' is not accepted", "bad_betas2");
  expect_usage_error("--betas 0.9,,0.99", "--betas: '0.9,,0.99' is not accepted", "bad_betas3");
  expect_usage_error("--accumulate-grad-batches 0", "--accumulate-grad-batches: '0'", "bad_accum");
  expect_usage_error("--limit-train-batches 1.5", "--limit-train-batches: '1.5' is not accepted", "bad_limit");
  expect_usage_error("--data mnist", "--data: 'mnist' is not accepted; expected random, teacher or csv:PATH",
                     "bad_data");
  expect_usage_error("--logger csv,wandb", "--logger: 'csv,wandb' is not accepted", "bad_logger");
  expect_usage_error("--logger csv,,csv", "--logger: 'csv,,csv' is not accepted", "bad_logger2");
  expect_usage_error("--momentum 0.9", "--momentum 0.9 applies to --optimizer sgd only", "bad_momentum");
  expect_usage_error("--max-epochs 0", "--max-epochs: '0' is not accepted", "bad_epochs");
  expect_usage_error("--no-such-option 3", "no-such-option", "unknown_option");
  expect_usage_error("--activation tanh", "--activation: 'tanh' is not accepted; expected one of relu", "bad_act");
}

TEST(Cli, RangesAreStatedAsTheOptionAcceptsThem) {
  // The smallest bucket is one byte; below it the reducer would get an empty bucket.
  for (const char* tiny : {"1e-9", "1e-300"}) {
    expect_usage_error(std::string("--devices 2 --bucket-cap-mb ") + tiny,
                       std::string("--bucket-cap-mb: '") + tiny +
                           "' is not accepted; expected a number of MiB from 9.5367431640625e-07 (one byte)",
                       "bucket_tiny");
  }
  expect_usage_error("--bucket-cap-mb 1e300", "--bucket-cap-mb: '1e300' is not accepted", "bucket_huge");
  expect_usage_error("--momentum -1", "--momentum: '-1' is not accepted; expected a number >= 0", "momentum_neg");
  expect_usage_error("--max-steps 1e12",
                     "--max-steps: '1e12' is not accepted; expected an integer >= 1, or -1 for no limit",
                     "max_steps_text");
  expect_usage_error("--max-steps 0", "--max-steps: '0' is not accepted; expected an integer >= 1, or -1 for no limit",
                     "max_steps_zero");
  expect_usage_error("--max-epochs -2",
                     "--max-epochs: '-2' is not accepted; expected an integer >= 1, or -1 with --max-steps",
                     "max_epochs_neg");
  expect_usage_error(
      "--limit-train-batches 0",
      "--limit-train-batches: '0' is not accepted; expected a fraction in (0,1] (with a point, e.g. 0.25) "
      "or a count >= 1",
      "limit_zero");
}

TEST(Cli, ALongValueIsQuotedCut) {
  const std::string huge(100000, '7');
  const auto r = train("--lr x" + huge, "long_value");
  EXPECT_EQ(r.exit_code, 2) << r.err.substr(0, 300);
  EXPECT_NE(r.err.find("--lr: 'x7777"), std::string::npos) << r.err.substr(0, 300);
  EXPECT_NE(r.err.find("... (100001 characters)' is not accepted; expected a finite number"), std::string::npos)
      << r.err.substr(0, 300);
  EXPECT_LT(r.err.size(), 400u);
}

TEST(Cli, InitFromWithCkptPathIsRefusedNamingBoth) {
  expect_usage_error("--init-from a.safetensors --ckpt-path b.safetensors",
                     "--init-from a.safetensors and --ckpt-path b.safetensors contradict: --ckpt-path restores the "
                     "parameters, the optimizer state and the position; give one of them",
                     "init_and_ckpt");
}

TEST(Cli, Zero1WithSyncEveryMicroBatchIsRefusedSayingWhy) {
  expect_usage_error("--strategy ddp_zero1 --sync-every-micro-batch",
                     "--sync-every-micro-batch allreduces every micro-batch's gradients, but --strategy ddp_zero1 "
                     "reduce-scatters them once per optimizer step; use --strategy ddp with it",
                     "zero1_sync");
}

TEST(Cli, ThreadsBeyondTheCoresGetTheOversubscriptionNoticeOnce) {
  const std::string threads = std::to_string(std::thread::hardware_concurrency() + 1);
  const auto r = train("--threads-per-device " + threads, "threads_notice");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string notice = "ddpscope: --threads-per-device " + threads + " needs " + threads + " cores but only ";
  const auto at = r.err.find(notice);
  ASSERT_NE(at, std::string::npos) << r.err;
  EXPECT_NE(r.err.find("are available: oversubscribing (threads share cores; expect each to run slower)\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(r.err.find(notice, at + 1), std::string::npos) << r.err;
  const auto fits = train("--threads-per-device 1", "threads_fit");
  EXPECT_EQ(fits.err.find("oversubscribing"), std::string::npos) << fits.err;
}

TEST(Cli, AConfigurationTooLargeForMemoryIsRefusedBeforeAnyFolderIsMade) {
  for (const char* option : {"--batch-size", "--input-dim", "--hidden-size", "--output-dim", "--dataset-size"}) {
    const std::string args = std::string(option) + " 999999999999";
    const auto dir = fresh_dir("too_big");
    // --batch-size alone is capped by the dataset's 64 samples: it fits, so test it with a large dataset.
    const std::string extra = std::string(option) == "--batch-size" ? " --dataset-size 999999999999" : "";
    const auto r = run_command(kBinary + " train" + kQuick + " " + args + extra, dir);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.err;
    EXPECT_NE(r.err.find("ddpscope: error: this configuration needs "), std::string::npos) << args << ": " << r.err;
    EXPECT_NE(r.err.find(" of memory"), std::string::npos) << args << ": " << r.err;
    EXPECT_NE(r.err.find("more than this machine's "), std::string::npos) << args << ": " << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir / "ddpscope_logs")) << args;
  }
  const auto r = train("--hidden-size 999999999999", "too_big_hint");
  EXPECT_NE(r.err.find("lower --hidden-size, --hidden-layers, --input-dim or --output-dim"), std::string::npos)
      << r.err;
}

TEST(Cli, ABatchLargerThanTheDatasetTrainsOnTheSamplesThereAre) {
  // Buffers are sized by what a batch can hold: 100,000,000 samples asked, 500 there.
  const auto dir = fresh_dir("batch_over_dataset");
  const auto r = run_command(kBinary +
                                 " train --batch-size 100000000 --dataset-size 500 --hidden-size 8 --max-epochs 2"
                                 " --progress-bar off",
                             dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto summary = nlohmann::json::parse(read_text(dir / "ddpscope_logs/version_0/summary.json"));
  EXPECT_EQ(summary["train_samples"], 2 * 500);
}

TEST(Cli, ConfigAndPresetGivenTwiceTakeTheLastAndEmptyOrFolderValuesAreRefused) {
  const auto dir = fresh_dir("config_twice");
  std::ofstream(dir / "a.yaml") << "lr: 0.5\n";
  std::ofstream(dir / "b.yaml") << "lr: 0.25\n";
  std::filesystem::create_directories(dir / "some/dir");
  const auto twice = run_command(kBinary + " train" + kQuick + " --config a.yaml --config b.yaml", dir);
  ASSERT_EQ(twice.exit_code, 0) << twice.err;
  EXPECT_NE(read_text(dir / "ddpscope_logs/version_0/hparams.yaml").find("lr: 0.25"), std::string::npos);
  const auto presets =
      run_command(kBinary + " train" + kQuick + " --preset seed --preset seed --devices 1 --strategy auto", dir);
  EXPECT_EQ(presets.exit_code, 0) << presets.err;
  const std::pair<const char*, const char*> cases[] = {
      {"--config some/dir/", "--config: 'some/dir/' is a folder; expected a YAML file"},
      {"--config ''", "--config: '' is not accepted; expected the path of a YAML file"},
      {"--preset ''", "--preset: '' is not accepted; expected seed"},
  };
  for (const auto& [args, message] : cases) {
    const auto r = run_command(kBinary + " train" + kQuick + " " + args, dir);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << ": " << r.err;
  }
}

TEST(Cli, ParserErrorsSayWhatTheUserDid) {
  const std::pair<const char*, const char*> cases[] = {
      {" train --lr", "ddpscope: error: --lr needs a value: --lr VALUE"},
      {" bogus", "ddpscope: error: 'bogus' is not a command; expected one of train, compare, doctor, predict"},
      {"", "ddpscope: error: no command given; expected one of train, compare, doctor, predict"},
  };
  for (const auto& [args, message] : cases) {
    const auto r = run_command(kBinary + args, fresh_dir("parser_words"));
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << ": " << r.err;
  }
}

// Where no GPU is visible (this build without CUDA, or a machine without a driver or
// device): what --accelerator cuda says, the same for every command and the YAML config.
std::string no_gpu_message() {
  const VisibleGpus gpus = visible_gpus();
  if (!gpus.devices.empty()) return "";
  EXPECT_FALSE(gpus.none_reason.empty());
  return gpu_build().with_cuda ? "--accelerator cuda: no CUDA device was found: " + gpus.none_reason
                               : "--accelerator cuda: this ddpscope was built without CUDA; to get a CUDA build, "
                                 "install the CUDA toolkit";
}

TEST(Cli, AcceleratorCudaWithoutAGpuExitsTwoSayingWhyInEveryCommand) {
  const std::string message = no_gpu_message();
  if (message.empty()) GTEST_SKIP() << "a GPU is visible: tests/gpu checks what cuda says then";
  expect_usage_error("--accelerator cuda", message, "cuda_train");
  // The teacher and a CSV file's rows are the GPU engine's too: refused only for the device.
  expect_usage_error("--accelerator cuda --data teacher", message, "cuda_teacher");
  expect_usage_error("--accelerator cuda --devices 2", message, "cuda_two_devices");
  expect_usage_error("--accelerator cuda --devices 2 --strategy ddp_zero1", message, "cuda_zero1");
  expect_usage_error("--accelerator cuda --precision bf16-mixed", message, "cuda_bf16");
  const auto dir = fresh_dir("cuda_commands");
  std::ofstream(dir / "cuda.yaml") << "accelerator: cuda\n";
  for (const std::string command :
       {"compare --devices 1 --accelerator cuda", "doctor --devices 1 --accelerator cuda",
        "doctor --devices 1,2,3 --accelerator cuda", "predict --from missing.json --accelerator cuda",
        "train --config cuda.yaml", "train --accelerator cuda --process-group-backend nccl"}) {
    const auto r = run_command(kBinary + " " + command, dir);
    EXPECT_EQ(r.exit_code, 2) << command << "\n" << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << command << ": " << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "ddpscope_logs")) << "refused before any run folder is made";
}

TEST(Cli, AcceleratorAutoWithoutAGpuTrainsOnCpuWithoutANote) {
  if (no_gpu_message().empty()) GTEST_SKIP() << "a GPU is visible: tests/gpu checks auto's note then";
  const auto r = train("--accelerator auto", "auto_cpu");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("GPU available"), std::string::npos) << r.err;
  // Two ranks agree on CPU (each asks, then the world votes) and train as CPU ranks.
  const auto two = train("--accelerator auto --devices 2", "auto_cpu_two");
  ASSERT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(two.err.find("GPU available"), std::string::npos) << two.err;
  EXPECT_NE(two.out.find("Training completed in"), std::string::npos) << two.out;
}

TEST(Cli, PrecisionOtherThan32TrueIsRefusedOnCpuNamingWhatItNeeds) {
  expect_usage_error("--precision tf32",
                     "--precision tf32 needs --accelerator cuda (TF32 tensor cores); this run is on CPU", "tf32");
  expect_usage_error("--precision bf16-mixed --accelerator cpu", "--precision bf16-mixed needs --accelerator cuda",
                     "bf16");
  expect_usage_error("--precision 16-mixed",
                     "--precision: '16-mixed' is not accepted; expected one of 32-true, tf32, "
                     "bf16-mixed",
                     "precision_bad");
  if (!no_gpu_message().empty()) {
    expect_usage_error("--precision tf32 --accelerator auto",
                       "--precision tf32 needs --accelerator cuda (TF32 tensor cores); --accelerator auto found no GPU",
                       "tf32_auto");
  }
}

TEST(Cli, NoCudaGraphIsRefusedOnCpuAndWrittenToHparams) {
  expect_usage_error("--no-cuda-graph",
                     "--no-cuda-graph needs --accelerator cuda (it launches a GPU step's kernels one by one); this run "
                     "is on CPU",
                     "no_graph");
  if (!no_gpu_message().empty()) {
    expect_usage_error("--no-cuda-graph --accelerator auto",
                       "--no-cuda-graph needs --accelerator cuda (it launches a GPU step's kernels one by one); "
                       "--accelerator auto found no GPU",
                       "no_graph_auto");
  }
  const auto r = train("", "cuda_graph_default");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto hparams = std::filesystem::temp_directory_path() / "ddpscope_test_cuda_graph_default" /
                       "ddpscope_logs/version_0/hparams.yaml";
  EXPECT_NE(read_text(hparams).find("no_cuda_graph: false"), std::string::npos) << read_text(hparams);
}

// How GPU ranks average (Lightning's process_group_backend): nccl is refused on CPU, where
// ranks average over MPI; mpi and auto train there; the choice is written to hparams.yaml.
TEST(Cli, ProcessGroupBackendNcclIsRefusedOnCpuAndMpiTrainsThere) {
  expect_usage_error("--process-group-backend nccl",
                     "--process-group-backend nccl needs --accelerator cuda (NCCL averages gradients on GPUs); this "
                     "run is on CPU (--accelerator cpu), where ranks average over MPI (auto or mpi)",
                     "pg_nccl_cpu");
  expect_usage_error("--process-group-backend gloo",
                     "--process-group-backend: 'gloo' is not accepted; expected one of auto, nccl, mpi", "pg_bad");
  const auto r = train("--process-group-backend mpi --devices 2", "pg_mpi");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto hparams =
      std::filesystem::temp_directory_path() / "ddpscope_test_pg_mpi" / "ddpscope_logs/version_0/hparams.yaml";
  EXPECT_NE(read_text(hparams).find("process_group_backend: mpi"), std::string::npos) << read_text(hparams);
}

TEST(Cli, PrecisionIsWrittenToHparamsAndReadFromYamlWithLightningsAlias) {
  const auto r = train("--precision 32", "precision_alias");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto hparams =
      std::filesystem::temp_directory_path() / "ddpscope_test_precision_alias" / "ddpscope_logs/version_0/hparams.yaml";
  EXPECT_NE(read_text(hparams).find("precision: 32-true"), std::string::npos) << read_text(hparams);
  const auto dir = fresh_dir("precision_yaml");
  std::ofstream(dir / "run.yaml") << "precision: tf32\n";
  const auto yaml = run_command(kBinary + " train" + kQuick + " --config run.yaml", dir);
  EXPECT_EQ(yaml.exit_code, 2) << yaml.err;
  EXPECT_NE(yaml.err.find("--precision tf32 needs --accelerator cuda"), std::string::npos) << yaml.err;
}

TEST(Cli, DevicesSaysHowItWasBuiltAndWhyNoGpuIsVisible) {
  const GpuBuild build = gpu_build();
  const auto dir = fresh_dir("devices");
  const auto text = run_command(kBinary + " devices", dir);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find(build.with_cuda ? "Built with CUDA " + build.cuda_version : "Built without CUDA"),
            std::string::npos)
      << text.out;
  const VisibleGpus gpus = visible_gpus();
  if (gpus.devices.empty()) EXPECT_NE(text.out.find("No CUDA device: " + gpus.none_reason), std::string::npos);

  const auto json = run_command(kBinary + " devices --json", dir);
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j.at("built_with_cuda").get<bool>(), build.with_cuda);
  EXPECT_EQ(j.at("gpus").size(), gpus.devices.size());
  std::string architectures;
  for (const auto& a : j.at("architectures"))
    architectures += (architectures.empty() ? "" : " ") + a.get<std::string>();
  EXPECT_EQ(architectures, build.architectures);
  if (build.with_cuda) EXPECT_NE(architectures.find("90-real"), std::string::npos) << "Hopper's code is built in";
  if (gpus.devices.empty()) EXPECT_EQ(j.at("no_gpu_reason").get<std::string>(), gpus.none_reason);
  // What the GPU machine's bundle must find there (bench/gpu/pack.sh reads these two).
  EXPECT_EQ(j.at("cublaslt").is_null() ? "" : j.at("cublaslt").get<std::string>(), build.cublaslt);
  EXPECT_EQ(j.at("nccl").is_null() ? "" : j.at("nccl").get<std::string>(), build.nccl);
}

TEST(Cli, ProgressBarDrawsEpochsWhenOn) {
  const auto r = train("--progress-bar on", "progress");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("Epoch 2/2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("train_loss="), std::string::npos) << r.err;
  const auto off = train("", "progress_off");  // stderr is a file here: auto means off
  EXPECT_EQ(off.err.find("Epoch"), std::string::npos) << off.err;
}

TEST(Cli, DeviceUtilizationIsLoggedAsTheSeedsMetric) {
  const auto dir = fresh_dir("utilization");
  const auto r = run_command(kBinary +
                                 " train --dataset-size 2048 --batch-size 16 --hidden-size 64 --max-epochs 20"
                                 " --log-every-n-steps 20 --monitor-interval-ms 10 --progress-bar off",
                             dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream csv(read_text(dir / "ddpscope_logs/version_0/metrics.csv"));
  std::string header, row;
  std::getline(csv, header);
  const std::vector<std::string> columns = [&] {
    std::vector<std::string> out;
    std::stringstream s(header);
    for (std::string c; std::getline(s, c, ',');) out.push_back(c);
    return out;
  }();
  const auto column = std::find(columns.begin(), columns.end(), "device_0_utilization");
  ASSERT_NE(column, columns.end()) << header;
  int values = 0;
  while (std::getline(csv, row)) {
    std::stringstream s(row);
    std::string cell;
    for (std::ptrdiff_t i = 0; i <= column - columns.begin(); ++i) std::getline(s, cell, ',');
    if (cell.empty()) continue;
    const double percent = std::stod(cell);
    EXPECT_GE(percent, 0);
    EXPECT_LE(percent, 100);
    ++values;
  }
  EXPECT_GT(values, 10);
  const auto summary = nlohmann::json::parse(read_text(dir / "ddpscope_logs/version_0/summary.json"));
  EXPECT_GT(summary["utilization_per_rank"][0].size(), 5u);
}

TEST(Cli, YamlConfigIsReadAndTheCommandLineOverridesIt) {
  const auto dir = fresh_dir("yaml_ok");
  std::ofstream(dir / "run.yaml") << "batch_size: 8\nhidden-size: 8\nmax_epochs: 1\nlr: 0.5\nshuffle: false\n";
  const auto r = run_command(kBinary + " train --dataset-size 32 --progress-bar off --config run.yaml --lr 0.25", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string hparams = read_text(dir / "ddpscope_logs/version_0/hparams.yaml");
  EXPECT_NE(hparams.find("batch_size: 8"), std::string::npos) << hparams;
  EXPECT_NE(hparams.find("lr: 0.25"), std::string::npos) << hparams;
  EXPECT_NE(hparams.find("shuffle: false"), std::string::npos) << hparams;
}

TEST(Cli, YamlErrorsExitTwo) {
  const auto dir = fresh_dir("yaml_bad");
  std::ofstream(dir / "unknown.yaml") << "batch_size: 8\nbatchsize: 3\n";
  std::ofstream(dir / "syntax.yaml") << "batch_size: [8\n";
  std::ofstream(dir / "value.yaml") << "batch_size: -1\n";
  std::ofstream(dir / "list.yaml") << "- 1\n- 2\n";
  std::ofstream(dir / "key.yaml") << "[a]: 1\n";
  std::ofstream(dir / "nested.yaml") << "lr: [1, {a: 2}]\n";
  const std::pair<const char*, const char*> cases[] = {
      {"unknown.yaml", "unknown key 'batchsize' (line 2)"},
      {"syntax.yaml", "syntax.yaml: line"},
      {"value.yaml", "--config value.yaml: --batch-size: '-1' is not accepted"},
      {"list.yaml", "expected a mapping of option names to values"},
      {"key.yaml", "line 1: keys must be option names"},
      {"nested.yaml", "key 'lr' (line 1) must be a value or a list of plain values"},
      {"missing.yaml", "--config: cannot read 'missing.yaml'"},
  };
  for (const auto& [file, message] : cases) {
    const auto r = run_command(kBinary + " train --config " + file, dir);
    EXPECT_EQ(r.exit_code, 2) << file;
    EXPECT_NE(r.err.find(message), std::string::npos) << file << ": " << r.err;
  }
}

TEST(Cli, PresetSeedSetsTheSeedsTrainerAndLaterOptionsOverrideIt) {
  // The seed preset asks for ddp on 3 devices; overriding them runs on one device.
  const auto dir = fresh_dir("preset");
  const auto r = run_command(kBinary + " train --preset seed --strategy auto --devices 1" + kQuick, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string hparams = read_text(dir / "ddpscope_logs/version_0/hparams.yaml");
  EXPECT_NE(hparams.find("accumulate_grad_batches: 3"), std::string::npos) << hparams;
  EXPECT_NE(hparams.find("preset: seed"), std::string::npos) << hparams;
  expect_usage_error("--preset llama", "--preset: 'llama' is not accepted; expected seed", "bad_preset");
}

TEST(Cli, CsvDataErrorsExitThreeWithFileLineAndColumn) {
  const auto dir = fresh_dir("csv_bad");
  std::ofstream(dir / "ragged.csv") << "1,2,3\n4,5\n";
  std::ofstream(dir / "text.csv") << "1,2,3\n4,abc,6\n";
  std::ofstream(dir / "empty.csv") << "";
  const std::pair<const char*, const char*> cases[] = {
      {"ragged.csv", "ragged.csv"},
      {"text.csv", "'abc'"},
      {"empty.csv", "empty.csv"},
      {"missing.csv", "missing.csv"},
  };
  for (const auto& [file, message] : cases) {
    const auto r = run_command(kBinary + " train --input-dim 2 --data csv:" + file + kQuick, dir);
    EXPECT_EQ(r.exit_code, 3) << file << ": " << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << file << ": " << r.err;
  }
  const auto text = run_command(kBinary + " train --input-dim 2 --data csv:text.csv" + kQuick, dir);
  EXPECT_NE(text.err.find("text.csv:2:2: cell 'abc' is not a number"), std::string::npos) << text.err;
  // A 5 MB cell is quoted cut, with its length.
  std::ofstream(dir / "huge.csv") << "1,2,3\n4," << std::string(5'000'000, 'x') << ",6\n";
  const auto huge = run_command(kBinary + " train --input-dim 2 --data csv:huge.csv" + kQuick, dir);
  EXPECT_EQ(huge.exit_code, 3) << huge.err.substr(0, 300);
  EXPECT_NE(huge.err.find("huge.csv:2:2: cell '" + std::string(60, 'x') + "... (5000000 characters)' is not a number"),
            std::string::npos)
      << huge.err.substr(0, 300);
  EXPECT_LT(huge.err.size(), 300u);
}

TEST(Cli, NonFiniteLossStopsTheRunNamingTheStepAndKeepsTheMetrics) {
  const auto dir = fresh_dir("nan");
  const auto r =
      run_command(kBinary + " train --data teacher --optimizer sgd --lr 1e30 --log-every-n-steps 1" + kQuick, dir);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("training loss is"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("optimizer step"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Lower --lr or check the data for extreme values, or use --optimizer adam"), std::string::npos)
      << r.err;
  const std::string metrics = read_text(dir / "ddpscope_logs/version_0/metrics.csv");
  EXPECT_TRUE(metrics.starts_with("epoch,step,train_loss")) << metrics;
}

TEST(Cli, ADivergingAdamRunIsNotAdvisedToUseAdam) {
  const auto r = train("--data teacher --lr 1e38 --log-every-n-steps 1 --max-epochs 50", "nan_adam");
  ASSERT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("stopping. Lower --lr or check the data for extreme values\n"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("--optimizer adam"), std::string::npos) << r.err;
}

TEST(Cli, AFullDiskMidRunFailsClearlyAndKeepsEveryFileWhole) {
  // A file size limit stands in for a full disk: metrics outgrow 4 KiB after some epochs.
  const auto dir = fresh_dir("full_disk");
  const auto r = run_command(
      "ulimit -f 4; " + kBinary + " train" + kQuick + " --log-every-n-steps 1 --max-epochs 300 --logger csv,jsonl",
      dir);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("File too large"), std::string::npos) << r.err;
  const auto run = dir / "ddpscope_logs/version_0";
  const std::string csv = read_text(run / "metrics.csv");
  ASSERT_FALSE(csv.empty());
  EXPECT_EQ(csv.back(), '\n');
  std::istringstream rows(csv);
  const auto commas = [](const std::string& line) { return std::count(line.begin(), line.end(), ','); };
  std::string header, row;
  std::getline(rows, header);
  while (std::getline(rows, row)) EXPECT_EQ(commas(row), commas(header)) << row;
  std::istringstream lines(read_text(run / "metrics.jsonl"));
  for (std::string line; std::getline(lines, line);) EXPECT_NO_THROW(nlohmann::json::parse(line)) << line;
  EXPECT_FALSE(std::filesystem::exists(run / "summary.json"));
}

TEST(Cli, UnwritableOutputFolderExitsTwo) {
  const auto dir = fresh_dir("unwritable");
  std::ofstream(dir / "file") << "not a folder";
  const auto r = run_command(kBinary + " train --default-root-dir file/sub" + kQuick, dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--default-root-dir: cannot create"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ddp

namespace ddp {
namespace {

const std::string kMpirun = std::string(DDPSCOPE_MPIRUN) + " --allow-run-as-root --oversubscribe --bind-to none";
const std::string kDdpRun =
    " --strategy ddp --data teacher --dataset-size 120 --batch-size 8 --hidden-size 8"
    " --max-epochs 3 --log-every-n-steps 2 --progress-bar off --monitor-interval-ms 0";

TEST(CliDdp, SelfRelaunchAndExplicitMpirunGiveTheSameResult) {
  const auto self_dir = fresh_dir("launch_self");
  const auto self = run_command(kBinary + " train --devices 2" + kDdpRun, self_dir);
  ASSERT_EQ(self.exit_code, 0) << self.err;
  EXPECT_NE(self.out.find("Training completed in"), std::string::npos) << self.out;
  const auto mpi_dir = fresh_dir("launch_mpirun");
  const auto mpi = run_command(kMpirun + " -np 2 " + kBinary + " train" + kDdpRun, mpi_dir);
  ASSERT_EQ(mpi.exit_code, 0) << mpi.err;
  // Only rank zero prints and writes.
  EXPECT_EQ(self.out.find("Training completed in"), self.out.rfind("Training completed in")) << self.out;
  EXPECT_EQ(mpi.out.find("Training completed in"), mpi.out.rfind("Training completed in")) << mpi.out;
  const std::string a = read_text(self_dir / "ddpscope_logs/version_0/metrics.csv");
  const std::string b = read_text(mpi_dir / "ddpscope_logs/version_0/metrics.csv");
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b);
  const auto summary = nlohmann::json::parse(read_text(mpi_dir / "ddpscope_logs/version_0/summary.json"));
  EXPECT_EQ(summary["world_size"], 2);
  EXPECT_EQ(summary["strategy"], "ddp");
  EXPECT_EQ(summary["gradient_transport"], "mpi");
  EXPECT_EQ(summary["phases_per_rank"].size(), 2u);
  EXPECT_EQ(summary["train_samples"], 3 * 120);
  EXPECT_GT(summary["allreduce"]["calls"].get<int>(), 0);
  EXPECT_FALSE(std::filesystem::exists(mpi_dir / "ddpscope_logs/version_1"));
}

TEST(CliDdp, DevicesThatDisagreeWithTheMpiWorldAreRefused) {
  const auto r = run_command(kMpirun + " -np 2 " + kBinary + " train --devices 3" + kDdpRun, fresh_dir("world"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--devices"), std::string::npos) << r.err;
}

TEST(CliDdp, StrategySingleUnderAMultiRankJobIsRefused) {
  const auto r =
      run_command(kMpirun + " -np 2 " + kBinary + " train --strategy single --max-epochs 1", fresh_dir("single"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--strategy single trains on one device, but mpirun started 2 ranks"), std::string::npos)
      << r.err;
}

TEST(CliDdp, RanksStartedWithDifferentOptionsAreRefused) {
  const auto r = run_command(
      kMpirun + " -np 1 " + kBinary + " train --lr 0.1" + kDdpRun + " : -np 1 " + kBinary + " train --lr 0.2" + kDdpRun,
      fresh_dir("mismatch"));
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("rank"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ddp
