// `ddpscope predict`: the binary, run on doctor.json files written here.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>

#include "doctor/scaling_model.h"
#include "support/run_command.h"

namespace ddp {
namespace {

using testing::fresh_dir;
using testing::run_command;

ModelParameters model() {
  ModelParameters m;
  m.alpha_seconds = 0.405e-6;
  m.beta_bytes_per_second = 7.95e9;
  m.flops_per_second = 190e9;
  m.fixed_seconds_per_step = 30e-6;
  m.fixed_seconds_per_epoch = 1e-3;
  m.startup_seconds = 0.003;
  m.launch_seconds = 0.22;
  m.val_flops_per_second = 170e9;
  m.val_fixed_seconds_per_batch = 10e-6;
  m.data_seconds_per_micro_batch = 2e-6;
  m.data_seconds_per_sample = 30e-9;
  m.optimizer_seconds_per_step = 5e-6;
  m.optimizer_seconds_per_parameter = 0.14e-9;
  m.logging_seconds_per_event = 50e-6;
  m.monitor_seconds_per_micro_batch = 2e-3;
  m.jitter_fraction = 0.03;
  return m;
}

nlohmann::json doctor_json() {
  return {{"schema", "ddpscope.doctor/1"},
          {"config",
           {{"input_dim", 10}, {"hidden_size", 256}, {"hidden_layers", 3}, {"output_dim", 1}, {"dataset_size", 5000},
            {"batch_size", 256}, {"max_epochs", 200}, {"accumulate_grad_batches", 3}, {"check_val_every_n_epoch", 1},
            {"limit_train_batches", 1.0}, {"log_every_n_steps", 50}, {"devices", 3}, {"bucket_cap_mb", 25},
            {"sync_every_micro_batch", false}, {"monitor_mode", "per-step"}}},
          {"runs", nlohmann::json::array()},
          {"model", to_json(model())}};
}

std::string write(const std::filesystem::path& dir, const std::string& name, const std::string& text) {
  const std::filesystem::path path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

std::string predict_command(const std::string& args) { return std::string(DDPSCOPE_BINARY) + " predict " + args; }

TEST(PredictCommand, PrintsTheModelsWallTimePhasesAndBreakEven) {
  const auto dir = fresh_dir("predict_ok");
  const std::string path = write(dir, "doctor.json", doctor_json().dump(2));
  const testing::CommandResult r = run_command(predict_command("--from " + path), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;

  WorkloadConfig c;  // the file's configuration; the prediction runs without the per-step probe
  c.devices = 3;
  c.accumulate_grad_batches = 3;
  const Prediction p = predict(model(), c);
  EXPECT_NE(r.out.find(fmt::format("Predicted wall time: {:.3f} s (1 device: {:.3f} s, speedup {:.2f}x)",
                                   p.wall_seconds, p.one_device_wall_seconds, p.speedup)),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Configuration: 3 devices x batch 256, MLP 10-256x3-1 (134657 parameters), 5000 samples, "
                       "200 epochs, accumulate 3"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Per rank and epoch: 1667 samples, 7 micro-batches, 3 optimizer steps, 3 gradient syncs"),
            std::string::npos)
      << r.out;
  for (const char* phase : {"startup", "data", "forward", "backward", "comm_wait", "optimizer", "validation",
                            "logging", "monitor", "other", "wall"}) {
    EXPECT_NE(r.out.find(std::string("\n") + phase + " "), std::string::npos) << phase;
  }
  const auto batch = smallest_batch_where_n_beats_one(model(), c, 3);
  EXPECT_NE(r.out.find(fmt::format("Smallest batch per device at which 3 devices beat 1: {}",
                                   batch ? std::to_string(*batch) : "none in 16..65536")),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Smallest hidden width at which 3 devices beat 1: "), std::string::npos);
}

TEST(PredictCommand, OverridesInterconnectAndDeviceList) {
  const auto dir = fresh_dir("predict_what_if");
  const std::string path = write(dir, "doctor.json", doctor_json().dump());
  const testing::CommandResult r =
      run_command(predict_command("--from " + path +
                                  " --devices 8 --batch-size 1024 --hidden-size 512 --hidden-layers 2 --max-epochs 10 "
                                  "--dataset-size 100000 --accumulate-grad-batches 1 --interconnect nvlink "
                                  "--devices-list 1,2,8,64"),
                  dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  WorkloadConfig c;
  c.devices = 8;
  c.batch_size = 1024;
  c.hidden_size = 512;
  c.hidden_layers = 2;
  c.epochs = 10;
  c.dataset_size = 100000;
  c.interconnect = "nvlink";
  const Prediction p = predict(model(), c);
  EXPECT_NE(r.out.find(fmt::format("Predicted wall time: {:.3f} s", p.wall_seconds)), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Interconnect: nvlink (alpha 2.00 us per ring step, beta 370.00 GB/s)"), std::string::npos)
      << r.out;
  for (int devices : {1, 2, 8, 64}) {
    c.devices = devices;
    EXPECT_NE(r.out.find(fmt::format("{:>8} {:>10.3f} {:>7.2f}x", devices, predict(model(), c).wall_seconds,
                                     predict(model(), c).speedup)),
              std::string::npos)
        << devices << "\n" << r.out;
  }
}

TEST(PredictCommand, BadInputFilesExitWithThree) {
  const auto dir = fresh_dir("predict_bad_files");
  testing::CommandResult r = run_command(predict_command("--from " + (dir / "absent.json").string()), dir);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("cannot read " + (dir / "absent.json").string()), std::string::npos) << r.err;

  r = run_command(predict_command("--from " + write(dir, "broken.json", "{\"model\": {")), dir);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("is not valid JSON"), std::string::npos) << r.err;

  nlohmann::json no_model = doctor_json();
  no_model.erase("model");
  r = run_command(predict_command("--from " + write(dir, "no_model.json", no_model.dump())), dir);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("has no \"model\" block"), std::string::npos) << r.err;

  nlohmann::json missing = doctor_json();
  missing["model"].erase("flops_per_second");
  const std::string missing_path = write(dir, "missing.json", missing.dump());
  r = run_command(predict_command("--from " + missing_path), dir);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find(missing_path + ": \"model\" has no \"flops_per_second\""), std::string::npos) << r.err;

  nlohmann::json wrong_type = doctor_json();
  wrong_type["config"]["batch_size"] = "large";
  r = run_command(predict_command("--from " + write(dir, "wrong_type.json", wrong_type.dump())), dir);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("\"batch_size\""), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;  // no numbers from a bad file
}

TEST(PredictCommand, BadOptionsExitWithTwo) {
  const auto dir = fresh_dir("predict_bad_options");
  const std::string path = write(dir, "doctor.json", doctor_json().dump());
  struct Case {
    std::string args;
    std::string message;
  };
  const Case cases[] = {
      {"", "--from"},
      {"--from " + path + " --devices 0", "--devices: '0' is not accepted"},
      {"--from " + path + " --batch-size -4", "--batch-size: '-4' is not accepted"},
      {"--from " + path + " --batch-size many", "many"},
      {"--from " + path + " --interconnect token-ring",
       "--interconnect: 'token-ring' is not accepted; expected measured, shared-memory, nvlink, pcie, infiniband, "
       "10gbe"},
      {"--from " + path + " --devices-list 1,0,3", "--devices-list: '0' is not accepted"},
      {"--from " + path + " --no-such-option", "no-such-option"},
  };
  for (const Case& c : cases) {
    const testing::CommandResult r = run_command(predict_command(c.args), dir);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << c.args << "\n" << r.out;
  }
}

}  // namespace
}  // namespace ddp
