// What a careless or unlucky user does to a run (a bad file on several ranks, a CSV file, a
// run that diverges at its end, two runs on one folder, a closed terminal, a Ctrl-C during a
// doctor): each reproduced as a user meets it, with the exit code and words they get.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "support/background_run.h"
#include "support/run_command.h"

namespace ddp {
namespace {

using testing::BackgroundRun;
using testing::fresh_dir;
using testing::read_text;
using testing::run_command;

const std::string kBinary = DDPSCOPE_BINARY;
const std::string kQuick = " --dataset-size 64 --batch-size 16 --hidden-size 8 --max-epochs 2 --progress-bar off";
const std::string kTiny = " --batch-size 16 --hidden-size 8 --hidden-layers 1 --max-epochs 2";

nlohmann::json read_json(const std::filesystem::path& path) { return nlohmann::json::parse(read_text(path)); }

// rows x (2 inputs, 1 target).
void write_csv(const std::filesystem::path& path, int rows) {
  std::ofstream out(path);
  for (int i = 0; i < rows; ++i) out << (i % 7) * 0.1 << ',' << (i % 5) * 0.2 << ',' << (i % 3) * 0.3 << '\n';
}

// Rank zero reads --init-from for all: its refusal must reach every rank at once, not leave
// them waiting until the watchdog's timeout ends the job with exit 4.
TEST(CliMisuse, ABadInitFromFileFailsEveryRankWithItsOwnExitCode) {
  const auto dir = fresh_dir("misuse_init_from");
  const auto r = run_command(
      "DDPSCOPE_COMM_TIMEOUT_S=60 " + kBinary + " train --devices 2 --init-from missing.safetensors" + kQuick, dir);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("missing.safetensors: cannot open"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("stopped responding"), std::string::npos) << r.err;
}

TEST(CliMisuse, ACsvFileIsRecordedAndCountedByItsRows) {
  const auto dir = fresh_dir("misuse_csv_rows");
  write_csv(dir / "rows.csv", 300);
  const auto train = run_command(kBinary + " train --input-dim 2 --data csv:rows.csv --dataset-size 7 --version t" +
                                     kQuick.substr(kQuick.find(" --batch-size")),
                                 dir);
  ASSERT_EQ(train.exit_code, 0) << train.err;
  EXPECT_NE(read_text(dir / "ddpscope_logs/t/hparams.yaml").find("dataset_size: 300\n"), std::string::npos);

  const auto compare = run_command(kBinary + " compare --devices 1,2 --input-dim 2 --data csv:rows.csv" + kTiny, dir);
  ASSERT_EQ(compare.exit_code, 0) << compare.err << compare.out;
  const auto doc = read_json(dir / "ddpscope_logs/version_0/compare.json");
  EXPECT_EQ(doc["config"]["dataset_size"], 300) << doc["config"].dump();
  EXPECT_FALSE(doc["model"].is_null()) << compare.out;  // the counts agree with what ran: a model is fitted
}

TEST(CliMisuse, ADoctorRefusesDataThatCannotTrainBeforeItsFirstRun) {
  const auto dir = fresh_dir("misuse_doctor_missing_csv");
  const auto r = run_command(kBinary + " doctor --devices 1,2 --input-dim 2 --data csv:missing.csv" + kTiny, dir);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("missing.csv: cannot open"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("running"), std::string::npos) << r.out;
}

// The last update overflows the parameters after a finite training loss.
TEST(CliMisuse, ARunThatDivergesInItsLastStepFailsWithoutAFinalCheckpoint) {
  const auto dir = fresh_dir("misuse_last_step");
  const auto r = run_command(kBinary + " train --lr 1e308 --max-epochs 1 --dataset-size 200 --progress-bar off", dir);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("validation loss is -nan after epoch 0"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Lower --lr"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir / "ddpscope_logs/version_0/final.safetensors"));
  EXPECT_EQ(r.out.find("Training completed"), std::string::npos) << r.out;
}

TEST(CliMisuse, ABadCommTimeoutIsSaidEveryTime) {
  const auto dir = fresh_dir("misuse_comm_timeout");
  for (int i = 0; i < 5; ++i) {
    const auto r = run_command("DDPSCOPE_COMM_TIMEOUT_S=abc " + kBinary + " train --devices 2" + kQuick, dir);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("DDPSCOPE_COMM_TIMEOUT_S='abc' is not a number of seconds"), std::string::npos) << r.err;
  }
}

// Two runs on one --version: the second is refused while the first writes, whatever its
// --overwrite, so no folder holds files of both.
TEST(CliMisuse, ASecondRunOnAFolderInUseIsRefused) {
  const auto dir = fresh_dir("misuse_same_version");
  BackgroundRun first(kBinary + " train --version shared --max-epochs 100000" + kQuick.substr(0, kQuick.find(" --max")),
                      dir);
  ASSERT_TRUE(first.wait_for("ddpscope_logs/shared/hparams.yaml")) << first.err();
  const auto second = run_command(kBinary + " train --version shared --overwrite" + kQuick, dir);
  EXPECT_EQ(second.exit_code, 2) << second.err;
  EXPECT_NE(second.err.find("is being written by another run that is still going"), std::string::npos) << second.err;
  ::kill(first.pid(), SIGTERM);
  EXPECT_EQ(first.wait(), 128 + SIGTERM) << first.err();
  EXPECT_TRUE(std::filesystem::exists(dir / "ddpscope_logs/shared/checkpoints/last.safetensors"));
  // Once it has ended the folder is free again.
  EXPECT_EQ(run_command(kBinary + " train --version shared --overwrite" + kQuick, dir).exit_code, 0);
}

// A closed terminal or SSH session sends SIGHUP: the run stops as on Ctrl-C, with a checkpoint.
TEST(CliMisuse, SighupStopsARunWithACheckpointAndSaysSo) {
  const auto dir = fresh_dir("misuse_sighup");
  BackgroundRun run(kBinary + " train --max-epochs 100000" + kQuick.substr(0, kQuick.find(" --max")), dir);
  ASSERT_TRUE(run.wait_for("ddpscope_logs/version_0/hparams.yaml")) << run.err();
  ::kill(run.pid(), SIGHUP);
  EXPECT_EQ(run.wait(), 128 + SIGHUP) << run.err();
  EXPECT_NE(run.err().find("stopped by SIGHUP"), std::string::npos) << run.err();
  EXPECT_TRUE(std::filesystem::exists(dir / "ddpscope_logs/version_0/checkpoints/last.safetensors"));
}

// Ctrl-C during a doctor: the run in progress stops, no other starts, and what ran is kept.
TEST(CliMisuse, ADoctorStoppedByASignalKeepsWhatRan) {
  const auto dir = fresh_dir("misuse_doctor_signal");
  BackgroundRun doctor(kBinary + " compare --devices 1,2 --dataset-size 4096 --batch-size 16 --max-epochs 100000", dir);
  ASSERT_TRUE(doctor.wait_for("ddpscope_logs/version_0/runs/devices=1/hparams.yaml")) << doctor.err();
  ::kill(doctor.pid(), SIGINT);
  EXPECT_EQ(doctor.wait(), 128 + SIGINT) << doctor.err();
  EXPECT_NE(doctor.err().find("stopped by SIGINT"), std::string::npos) << doctor.err();
  const auto doc = read_json(dir / "ddpscope_logs/version_0/compare.json");
  ASSERT_EQ(doc["runs"].size(), 1u) << doc["runs"].dump();  // the 2-device run never started
  EXPECT_NE(doc["runs"][0]["error"].get<std::string>().find("stopped by SIGINT"), std::string::npos);
  EXPECT_NE(doctor.out().find("Stopped by SIGINT"), std::string::npos) << doctor.out();
}

// A checkpoint inside an epoch counts its micro-batches: another batch size or seed would
// silently retrain or skip samples, so it is refused, naming what to give.
TEST(CliMisuse, AMidEpochCheckpointIsNotResumedWithAnotherBatchSizeOrSeed) {
  const auto dir = fresh_dir("misuse_mid_epoch");
  const std::string run =
      " train --dataset-size 200000 --batch-size 16 --hidden-size 8 --max-epochs 1 --progress-bar off";
  BackgroundRun first(kBinary + run + " --version first", dir);
  ASSERT_TRUE(first.wait_for("ddpscope_logs/first/hparams.yaml")) << first.err();
  ::kill(first.pid(), SIGTERM);
  ASSERT_EQ(first.wait(), 128 + SIGTERM) << first.err();
  const std::string checkpoint = "ddpscope_logs/first/checkpoints/last.safetensors";
  ASSERT_NE(first.err().find("at epoch 0,"), std::string::npos) << first.err();  // inside the only epoch

  const auto other_batch =
      run_command(kBinary + run + " --batch-size 32 --seed 5 --version second --ckpt-path " + checkpoint, dir);
  EXPECT_EQ(other_batch.exit_code, 2) << other_batch.err;
  EXPECT_NE(other_batch.err.find("which this run's --batch-size 32, --seed 5 would order or cut differently; "
                                 "resume with the checkpoint's --batch-size 16, --seed 0"),
            std::string::npos)
      << other_batch.err;
  EXPECT_EQ(run_command(kBinary + run + " --version third --ckpt-path " + checkpoint, dir).exit_code, 0);
}

// Values at the edge of int64: a whole dataset per batch, a limit past any epoch's batches.
TEST(CliMisuse, IntegerEdgesTrainWhatTheyMean) {
  const auto dir = fresh_dir("misuse_integer_edges");
  const std::string base = " train --dataset-size 64 --hidden-size 8 --max-epochs 2 --progress-bar off";
  const auto huge_batch = run_command(kBinary + base + " --batch-size 9223372036854775807 --version a", dir);
  ASSERT_EQ(huge_batch.exit_code, 0) << huge_batch.err;
  EXPECT_EQ(read_json(dir / "ddpscope_logs/a/summary.json")["optimizer_steps"], 2);  // one batch per epoch
  const auto huge_limit =
      run_command(kBinary + base + " --batch-size 16 --limit-train-batches 9223372036854775806 --version b", dir);
  ASSERT_EQ(huge_limit.exit_code, 0) << huge_limit.err;
  EXPECT_EQ(read_json(dir / "ddpscope_logs/b/summary.json")["optimizer_steps"], 8);  // every batch of both epochs
}

TEST(CliMisuse, YamlThatWouldBeMisreadIsRefused) {
  const auto dir = fresh_dir("misuse_yaml");
  const auto refusal = [&](const std::string& file, const std::string& text) {
    if (!text.empty()) std::ofstream(dir / file) << text;
    const auto r = run_command(kBinary + " train --config " + file + kQuick, dir);
    EXPECT_EQ(r.exit_code, 2) << file << r.err;
    return r.err;
  };
  EXPECT_NE(refusal("two.yaml", "batch_size: 8\n---\nbatch_size: 16\n")
                .find("--config two.yaml: holds more than one YAML document (separated by ---); expected one "
                      "mapping"),
            std::string::npos);
  // yaml-cpp reads this as endless empty documents: refused at once, not a hang.
  EXPECT_NE(refusal("endless.yaml", ",[").find("--config endless.yaml: holds more than one YAML document"),
            std::string::npos);
  EXPECT_NE(refusal("twice.yaml", "batch_size: 8\nlr: 0.1\nbatch_size: 16\n")
                .find("--config twice.yaml: key 'batch_size' (line 3) sets 'batch-size' again (line 1); give each "
                      "option once"),
            std::string::npos);
  EXPECT_NE(refusal("spellings.yaml", "batch-size: 8\nbatch_size: 16\n")
                .find("key 'batch_size' (line 2) sets 'batch-size' again (line 1)"),
            std::string::npos);
  EXPECT_NE(refusal("/proc/self/mem", "").find("--config: /proc/self/mem: cannot read: Input/output error"),
            std::string::npos);
  ASSERT_EQ(::mkfifo((dir / "options.fifo").c_str(), 0600), 0);
  EXPECT_NE(refusal("options.fifo", "").find("--config: options.fifo: is a FIFO, expected a YAML file"),
            std::string::npos);
}

TEST(CliMisuse, SmallerEdgesAreRefusedNamingWhatWasWrong) {
  const auto dir = fresh_dir("misuse_smaller");
  const auto usage = [&](const std::string& args) {
    const auto r = run_command(kBinary + " train" + kQuick + " " + args, dir);
    EXPECT_EQ(r.exit_code, 2) << args << r.err;
    return r.err;
  };
  EXPECT_NE(usage("--num-nodes 2").find("--num-nodes 2 but this job's 1 rank(s) run on 1 host(s)"), std::string::npos);
  EXPECT_NE(usage("--eps 1e-320").find("--eps: '1e-320' is not accepted; expected a number >= 1.2e-38"),
            std::string::npos);
  EXPECT_NE(usage("--name " + std::string(300, 'n')).find("--name: 'nnn"), std::string::npos);
  // mpirun that cannot start the job: its reason, not a bare exit code.
  const auto slots = run_command("DDPSCOPE_MPIRUN_ARGS='--np 999' " + kBinary + " train --devices 2" + kQuick, dir);
  EXPECT_EQ(slots.exit_code, 1) << slots.err;
  EXPECT_NE(slots.err.find("mpirun exited with code 1 before starting the ranks: There are not enough slots"),
            std::string::npos)
      << slots.err;
}

// The command that reproduces a study is pasted into a shell: quoted so that it runs as typed.
TEST(CliMisuse, TheStudysCommandRunsAsTypedInAShell) {
  const auto dir = fresh_dir("misuse_quoting");
  const auto r = run_command(
      kBinary + " compare --devices 1 --dataset-size 64 --name 'a b<c' --default-root-dir 'my logs'" + kTiny, dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto doc = read_json(dir / "my logs/a b<c/version_0/compare.json");
  std::string command = doc["commands"][0].get<std::string>();
  ASSERT_TRUE(command.starts_with("ddpscope ")) << command;
  command = kBinary + command.substr(8);
  EXPECT_EQ(run_command(command, dir).exit_code, 0) << command;
  EXPECT_TRUE(std::filesystem::exists(dir / "my logs/a b<c/version_1/compare.json")) << command;
}

}  // namespace
}  // namespace ddp
