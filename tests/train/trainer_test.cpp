// The Trainer's loop semantics (Lightning's), its outputs, and that training learns.
#include "ddpscope/trainer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>

#include "ddpscope/error.h"
#include "ddpscope/world_join.h"
#include "support/run_command.h"
#include "train/config/options.h"
#include "train/config/run_config.h"
#include "train/loop/regression_task.h"
#include "train/records/run_summary.h"

namespace ddp {
namespace {

using testing::fresh_dir;
using testing::read_text;

// metrics.csv as rows of column -> cell.
std::vector<std::map<std::string, std::string>> read_csv(const std::filesystem::path& path) {
  std::istringstream lines(read_text(path));
  auto split = [](const std::string& line) {
    std::vector<std::string> cells;
    std::stringstream s(line);
    for (std::string cell; std::getline(s, cell, ',');) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.emplace_back();
    return cells;
  };
  std::string line;
  std::getline(lines, line);
  const std::vector<std::string> header = split(line);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(lines, line)) {
    const std::vector<std::string> cells = split(line);
    EXPECT_EQ(cells.size(), header.size()) << line;
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < header.size() && i < cells.size(); ++i) row[header[i]] = cells[i];
    rows.push_back(row);
  }
  return rows;
}

Config small_config(const std::string& test) {
  Config c;
  c.model = {.input_dim = 4, .hidden_size = 16, .hidden_layers = 2, .output_dim = 2};
  c.data.data = "teacher";
  c.data.dataset_size = 100;
  c.data.batch_size = 16;  // 7 batches per epoch: 6 of 16 and one of 4
  c.trainer.max_epochs = 2;
  c.trainer.progress_bar = ProgressMode::kOff;
  c.trainer.monitor_interval_ms = 0;  // metrics.csv without timing-dependent utilization columns
  c.trainer.default_root_dir = fresh_dir(test).string();
  return c;
}

// Records, at every training step, whether the parameters changed since the previous
// step: they change exactly when the optimizer stepped after the previous micro-batch.
class StepWatcher : public RegressionModel {
 public:
  using RegressionModel::RegressionModel;
  Loss training_step(const Batch& batch, int64_t batch_idx) override {
    const std::span<const float> p = network().params();
    const double sum = std::accumulate(p.begin(), p.end(), 0.0);
    stepped_before.push_back(calls > 0 && sum != last_sum);
    batch_indices.push_back(batch_idx);
    last_sum = sum;
    ++calls;
    return RegressionModel::training_step(batch, batch_idx);
  }
  std::vector<bool> stepped_before;
  std::vector<int64_t> batch_indices;
  double last_sum = 0;
  int64_t calls = 0;
};

TEST(Trainer, AccumulationStepsEveryKthMicroBatchAndAtTheEndOfEachEpoch) {
  Config c = small_config("accumulate");
  c.trainer.accumulate_grad_batches = 3;
  RegressionDataModule data(c);
  StepWatcher model(c);
  Trainer trainer(c.trainer, join_world(c.trainer));
  trainer.fit(model, data);
  // Per epoch of 7 micro-batches: steps after 2, 5 and 6 (the last).
  EXPECT_EQ(trainer.global_step(), 6);
  const std::vector<int64_t> indices = {0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 6};
  EXPECT_EQ(model.batch_indices, indices);
  // stepped_before[i]: the optimizer ran after micro-batch i-1.
  const std::vector<bool> expected = {false, false, false, true, false, false, true,
                                      true,  false, false, true, false, false, true};
  EXPECT_EQ(model.stepped_before, expected);
}

TEST(Trainer, SeedWorkloadTakesSevenOptimizerStepsPerEpoch) {
  Config c;
  c.model.hidden_size = 8;
  c.trainer.max_epochs = 2;
  c.trainer.accumulate_grad_batches = 3;
  c.trainer.progress_bar = ProgressMode::kOff;
  c.trainer.default_root_dir = fresh_dir("seed_steps").string();
  RegressionDataModule data(c);
  RegressionModel model(c);
  Trainer trainer(c.trainer, join_world(c.trainer));
  trainer.fit(model, data);
  EXPECT_EQ(trainer.global_step(), 14);  // ceil(20 / 3) per epoch
  EXPECT_EQ(trainer.stats().train_samples, 10000);
}

TEST(Trainer, MaxStepsStopsInsideAnEpoch) {
  Config c = small_config("max_steps");
  c.trainer.max_epochs = 10;
  c.trainer.max_steps = 9;
  RegressionDataModule data(c);
  RegressionModel model(c);
  Trainer trainer(c.trainer, join_world(c.trainer));
  trainer.fit(model, data);
  EXPECT_EQ(trainer.global_step(), 9);
  EXPECT_EQ(trainer.stats().epochs, 1);  // the second epoch did not complete
}

TEST(Trainer, LimitTrainBatchesCountAndFraction) {
  for (const auto& [limit, steps] : {std::pair{BatchLimit{.count = 3}, 6}, std::pair{BatchLimit{.fraction = 0.5}, 6}}) {
    Config c = small_config("limit");
    c.trainer.limit_train_batches = limit;
    RegressionDataModule data(c);
    RegressionModel model(c);
    Trainer trainer(c.trainer, join_world(c.trainer));
    trainer.fit(model, data);
    EXPECT_EQ(trainer.global_step(), steps) << limit.fraction;  // 3 batches per epoch, 2 epochs
  }
}

TEST(Trainer, MetricsCsvFollowsLogEveryNStepsAndCheckValEveryNEpoch) {
  Config c = small_config("metrics");
  c.trainer.max_epochs = 4;
  c.trainer.log_every_n_steps = 5;  // 28 optimizer steps: logged at steps 5, 10, ..., 25
  c.trainer.check_val_every_n_epoch = 2;
  RegressionDataModule data(c);
  RegressionModel model(c);
  Trainer trainer(c.trainer, join_world(c.trainer, resolved_options(c)), resolved_options(c));
  trainer.fit(model, data);
  const std::string csv = read_text(trainer.log_dir() / "metrics.csv");
  const std::string expected_header = "epoch,step,train_loss,val_loss\n";
  ASSERT_TRUE(csv.starts_with(expected_header)) << csv;
  std::vector<std::string> train_rows, val_rows;
  std::istringstream lines(csv.substr(expected_header.size()));
  for (std::string line; std::getline(lines, line);) {
    (line.back() == ',' ? train_rows : val_rows).push_back(line);
  }
  ASSERT_EQ(train_rows.size(), 5u) << csv;
  EXPECT_TRUE(train_rows[0].starts_with("0,4,")) << train_rows[0];  // Lightning's step: optimizer steps - 1
  EXPECT_TRUE(train_rows[4].starts_with("3,24,")) << train_rows[4];
  ASSERT_EQ(val_rows.size(), 2u) << csv;  // after epochs 1 and 3
  EXPECT_TRUE(val_rows[0].starts_with("1,13,,")) << val_rows[0];
  EXPECT_TRUE(val_rows[1].starts_with("3,27,,")) << val_rows[1];
}

TEST(Trainer, SummaryPhasesSumToWallTimeAndSchemaIsComplete) {
  Config c = small_config("summary");
  c.trainer.max_epochs = 3;
  RegressionDataModule data(c);
  RegressionModel model(c);
  Trainer trainer(c.trainer, join_world(c.trainer, resolved_options(c)), resolved_options(c));
  trainer.fit(model, data);
  const auto summary = nlohmann::json::parse(read_text(trainer.log_dir() / "summary.json"));
  EXPECT_EQ(summary["schema"], "ddpscope.summary/1");
  EXPECT_EQ(summary["world_size"], 1);
  EXPECT_EQ(summary["epochs"], 3);
  EXPECT_EQ(summary["optimizer_steps"], 21);
  EXPECT_EQ(summary["train_samples"], 300);
  EXPECT_EQ(summary["config"]["batch_size"], 16);
  EXPECT_TRUE(summary["final"]["val_loss"].is_number());
  const double wall = summary["wall_seconds"];
  double sum = 0;
  for (const char* phase : {"startup", "data", "forward", "backward", "comm_wait", "optimizer", "validation", "logging",
                            "monitor", "other"}) {
    ASSERT_TRUE(summary["phases"].contains(phase)) << phase;
    sum += summary["phases"][phase].get<double>();
  }
  EXPECT_GT(summary["phases"]["forward"].get<double>(), 0);
  EXPECT_GT(summary["phases"]["backward"].get<double>(), 0);
  EXPECT_GT(summary["phases"]["validation"].get<double>(), 0);
  EXPECT_NEAR(sum, wall, 0.02 * wall);
  EXPECT_EQ(summary["phases_per_rank"].size(), 1u);
  EXPECT_TRUE(std::filesystem::exists(trainer.log_dir() / "hparams.yaml"));
}

TEST(Trainer, TeacherTrainingHalvesValidationLossWithinThirtyEpochs) {
  Config c;
  c.model = {.input_dim = 10, .hidden_size = 64, .hidden_layers = 2, .output_dim = 1};
  c.data.data = "teacher";
  c.data.dataset_size = 2000;
  c.data.batch_size = 64;
  c.optimizer.lr = 0.003;
  c.trainer.max_epochs = 30;
  c.trainer.progress_bar = ProgressMode::kOff;
  c.trainer.default_root_dir = fresh_dir("teacher").string();
  RegressionDataModule data(c);
  RegressionModel model(c);
  Trainer trainer(c.trainer, join_world(c.trainer));
  trainer.fit(model, data);
  std::vector<double> val_losses;
  for (const auto& row : read_csv(trainer.log_dir() / "metrics.csv")) {
    if (!row.at("val_loss").empty()) val_losses.push_back(std::stod(row.at("val_loss")));
  }
  ASSERT_EQ(val_losses.size(), 30u);
  EXPECT_LT(val_losses.back(), 0.5 * val_losses.front())
      << "first " << val_losses.front() << " last " << val_losses.back();
}

// The message of the UsageError that fit() throws; "(no error)" when it throws none.
std::string fit_usage_error(Trainer& trainer, LightningModule& model, LightningDataModule& data) {
  try {
    trainer.fit(model, data);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Trainer, DataWithTheWrongShapeForTheModelIsRefused) {
  Config c = small_config("shape");
  RegressionDataModule data(c);
  c.model.input_dim = 5;
  RegressionModel model(c);
  Trainer trainer(c.trainer, join_world(c.trainer));
  const std::string error = fit_usage_error(trainer, model, data);
  EXPECT_NE(error.find("--input-dim 5"), std::string::npos) << error;
}

// A training step must hand backward its gradient: a bare number is refused, by name.
class NumberOnlyModel : public RegressionModel {
 public:
  using RegressionModel::RegressionModel;
  Loss training_step(const Batch& batch, int64_t batch_idx) override {
    return Loss(RegressionModel::training_step(batch, batch_idx).value());
  }
};

TEST(Trainer, ATrainingStepWhoseLossHasNoGradientIsRefused) {
  Config c = small_config("no_gradient");
  RegressionDataModule data(c);
  NumberOnlyModel model(c);
  const std::vector<float> before(model.network().params().begin(), model.network().params().end());
  Trainer trainer(c.trainer, join_world(c.trainer));
  EXPECT_EQ(fit_usage_error(trainer, model, data),
            "training_step returned a Loss without a gradient; return the Loss that mse_loss() gives, which "
            "backward starts from");
  EXPECT_EQ(trainer.global_step(), 0);
  EXPECT_TRUE(std::equal(before.begin(), before.end(), model.network().params().begin()));
}

// The GPU engine trains the built-in regression task only: a module of the program's own
// (here a subclass, whose steps are its own) is refused on any machine, GPU or not.
TEST(Trainer, ACustomModuleOnCudaIsRefusedBeforeTraining) {
  Config c = small_config("custom_on_cuda");
  c.trainer.accelerator = Accelerator::kCuda;
  RegressionDataModule data(c);
  NumberOnlyModel model(c);
  Trainer trainer(c.trainer, join_world(c.trainer));
  const std::string error = fit_usage_error(trainer, model, data);
  EXPECT_EQ(error.rfind("--accelerator cuda: the GPU engine trains the built-in regression task", 0), 0U) << error;
  EXPECT_EQ(trainer.global_step(), 0);
}

TEST(Trainer, OneDeviceWithoutMpirunTrainsAloneAndLaunchesNothing) {
  TrainerOptions options;
  options.devices = 1;
  EXPECT_FALSE(run_ranks_if_launcher(options).has_value());
  const World world = join_world(options);
  EXPECT_EQ(world.comm().size(), 1);
  EXPECT_EQ(world.comm().rank(), 0);
}

// The module's activations are sized by an explicit call, for the Trainer's largest batch.
TEST(Trainer, ReserveBatchSizesTheModulesWorkspaceForTheLargestBatch) {
  Config c = small_config("reserve");
  c.trainer.max_epochs = 1;
  RegressionDataModule data(c);
  RegressionModel model(c);
  EXPECT_EQ(model.workspace().max_batch(), 1);
  Trainer trainer(c.trainer, join_world(c.trainer));
  trainer.fit(model, data);
  EXPECT_EQ(model.workspace().max_batch(), 16);
  model.reserve_batch(40);
  EXPECT_EQ(model.workspace().max_batch(), 40);
}

}  // namespace
}  // namespace ddp
