// RunSummary is summary.json as typed data: it reads back what it writes, field for field,
// and a summary.json that ddpscope wrote is read and written again to the same text.
#include "train/run_summary.h"

#include <gtest/gtest.h>

#include <string>

#include "ddpscope/config.h"
#include "ddpscope/error.h"
#include "support/run_command.h"
#include "train/options.h"

namespace ddp {
namespace {

// Every field set, with the values a 2-rank run of the seed would have.
RunSummary two_rank_summary() {
  Config config;
  apply_preset(config, "seed");
  apply_option(config, "limit-train-batches", "0.5");
  apply_option(config, "lr", "0.001");
  RunSummary s;
  s.options = resolved_options(config);
  s.accelerator = "cpu";
  s.strategy = "ddp";
  s.world_size = 2;
  s.hosts = {"node1", "node2"};
  s.epochs = 3;
  s.first_epoch_end_seconds = 0.731;
  s.last_epoch_end_seconds = 1.917;
  s.optimizer_steps = 12;
  s.optimizer_steps_run = 9;
  s.train_samples = 7500;
  s.wall_seconds = 2.2345;
  s.final_train_loss = 1.0625;
  s.final_val_loss = 0.998;
  PhaseSeconds rank0{}, rank1{};
  for (std::size_t p = 0; p < kPhaseCount; ++p) {
    rank0[p] = 0.01 * static_cast<double>(p + 1);
    rank1[p] = 0.013 * static_cast<double>(p + 2);
  }
  s.phases_per_rank = {rank0, rank1};
  s.training_flops_per_sample = 798208;
  s.gemm_peak_flops_per_second = 4.1e10;
  s.utilization_per_rank = {{{0.1, 97.5}, {0.2, 100}}, {{0.1, 88.25}}};
  s.allreduce_per_rank = {{6, 3231768, 0.0421, 0.05, 0.012}, {6, 3231768, 0.0387, 0.049, 0.02}};
  s.allreduce = s.allreduce_per_rank[0];
  s.steady_epochs = {.count = 2, .mean_seconds = 0.593, .sd_seconds = 0.0212};
  return s;
}

RunSummary read_back(const nlohmann::ordered_json& j) { return j.get<RunSummary>(); }

TEST(RunSummary, ReadsBackEveryFieldItWrote) {
  const RunSummary s = two_rank_summary();
  EXPECT_TRUE(read_back(to_json(s)) == s);
  RunSummary no_losses = s;  // a run stopped before its first step and validation
  no_losses.final_train_loss.reset();
  no_losses.final_val_loss.reset();
  EXPECT_TRUE(read_back(to_json(no_losses)) == no_losses);
  EXPECT_FALSE(read_back(to_json(no_losses)) == s);
}

TEST(RunSummary, WritesTheSchemaAndTheRatesDerivedFromItsCounts) {
  const RunSummary s = two_rank_summary();
  const nlohmann::ordered_json j = to_json(s);
  EXPECT_EQ(j["schema"], "ddpscope.summary/1");
  EXPECT_EQ(j["version"], DDPSCOPE_VERSION);
  EXPECT_DOUBLE_EQ(j["samples_per_second"].get<double>(), 7500 / 2.2345);
  EXPECT_DOUBLE_EQ(j["throughput"]["optimizer_steps_per_second"].get<double>(), 9 / 2.2345);
  EXPECT_DOUBLE_EQ(j["throughput"]["model_flops_per_second"].get<double>(), 798208 * (7500 / 2.2345));
  EXPECT_DOUBLE_EQ(j["phases"]["forward"].get<double>(), (0.03 + 0.052) / 2);  // the mean over ranks
  EXPECT_DOUBLE_EQ(j["allreduce"]["hidden_share"].get<double>(), 0.012 / 0.05);
  // The options as typed values: a count or a fraction keeps its form.
  EXPECT_TRUE(j["config"]["limit_train_batches"].is_number_float());
  EXPECT_EQ(j["config"]["accumulate_grad_batches"], 3);
  EXPECT_EQ(j["config"]["preset"], "seed");
}

TEST(RunSummary, ATypedConfigComesBackThroughTheOptionTable) {
  RunSummary s = two_rank_summary();
  Config config = read_back(to_json(s)).typed_config();
  EXPECT_EQ(config.trainer.accumulate_grad_batches, 3);
  EXPECT_EQ(config.preset, "seed");
  EXPECT_FALSE(config.trainer.limit_train_batches_is_count);
  EXPECT_DOUBLE_EQ(config.trainer.limit_train_batches, 0.5);
  for (const char* limit : {"1.0", "3", "1"}) {
    Config with;
    apply_option(with, "limit-train-batches", limit);
    s.options = resolved_options(with);
    config = read_back(to_json(s)).typed_config();
    EXPECT_EQ(config.trainer.limit_train_batches_is_count, std::string(limit) != "1.0") << limit;
    EXPECT_EQ(resolved_options(config), resolved_options(with)) << limit;
  }
  s.options = {{"no_such_option", "1"}};
  EXPECT_THROW(s.typed_config(), DataError);
}

TEST(RunSummary, AMissingOrMistypedFieldIsNamed) {
  const nlohmann::ordered_json good = to_json(two_rank_summary());
  auto message_for = [](const nlohmann::ordered_json& j) {
    try {
      read_back(j);
    } catch (const DataError& e) {
      return std::string(e.what());
    }
    return std::string("(read without an error)");
  };
  nlohmann::ordered_json bad = good;
  bad.erase("epochs");
  EXPECT_EQ(message_for(bad), "summary.json has no \"epochs\"");
  bad = good;
  bad["wall_seconds"] = "slow";
  EXPECT_EQ(message_for(bad), "summary.json field \"wall_seconds\" is \"slow\", expected a number");
  bad = good;
  bad["phases_per_rank"][1].erase("forward");
  EXPECT_EQ(message_for(bad), "summary.json phases_per_rank has no \"forward\"");
  bad = good;
  bad["steady_epochs"].erase("sd_seconds");
  EXPECT_EQ(message_for(bad), "summary.json steady_epochs has no \"sd_seconds\"");
  bad = good;
  bad.erase("steady_epochs");  // a summary.json from before it: no spread, not an error
  EXPECT_EQ(read_back(bad).steady_epochs, EpochSpread{});
  bad["schema"] = "ddpscope.summary/2";
  EXPECT_EQ(message_for(bad),
            "summary.json field \"schema\" is \"ddpscope.summary/2\", expected \"ddpscope.summary/1\"");
}

// What the trainer writes, through the command line: read and written again, byte for byte.
RunSummary expect_same_text_after_a_round_trip(const std::string& options, const std::string& name, int epochs = 2) {
  const auto dir = testing::fresh_dir(name);
  const auto r = testing::run_command(std::string(DDPSCOPE_BINARY) +
                                          " train --dataset-size 64 --batch-size 16 "
                                          "--hidden-size 8 --progress-bar off --version 0 --max-epochs " +
                                          std::to_string(epochs) + " " + options,
                                      dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0) return {};
  const std::string text = testing::read_text(dir / "ddpscope_logs" / "version_0" / "summary.json");
  const RunSummary s = read_back(nlohmann::ordered_json::parse(text));
  EXPECT_EQ(to_json(s).dump(2) + "\n", text);
  EXPECT_TRUE(read_back(to_json(s)) == s);
  EXPECT_GT(s.optimizer_steps_run, 0);
  EXPECT_GT(s.training_flops_per_sample, 0);
  return s;
}

// The steady epochs are the 2nd to the last: their mean is the time between the first and
// the last epoch's ends over their count (up to rounding), and they vary.
void expect_steady_epochs_of_the_run(const RunSummary& s, int epochs) {
  EXPECT_EQ(s.steady_epochs.count, epochs - 1);
  EXPECT_NEAR(s.steady_epochs.mean_seconds, (s.last_epoch_end_seconds - s.first_epoch_end_seconds) / (epochs - 1),
              1e-9);
  EXPECT_GT(s.steady_epochs.sd_seconds, 0);
  EXPECT_LT(s.steady_epochs.sd_seconds, s.last_epoch_end_seconds);
}

TEST(RunSummary, ASummaryJsonWrittenByTrainRoundTripsToTheSameText) {
  expect_same_text_after_a_round_trip("--limit-train-batches 3 --lr 0.003", "run_summary_count");
}

TEST(RunSummary, ATwoRankSummaryJsonRoundTripsToTheSameText) {
  expect_same_text_after_a_round_trip("--devices 2 --limit-train-batches 0.5 --accumulate-grad-batches 2",
                                      "run_summary_two_ranks");
}

TEST(RunSummary, ARunOfTwoEpochsHasNoSteadyEpochsInItsFile) {
  const RunSummary s = expect_same_text_after_a_round_trip("", "run_summary_two_epochs");
  EXPECT_EQ(s.steady_epochs, EpochSpread{});
  EXPECT_FALSE(to_json(s).contains("steady_epochs"));
}

TEST(RunSummary, SteadyEpochsOfOneRankRoundTripToTheSameText) {
  const RunSummary s = expect_same_text_after_a_round_trip("", "run_summary_steady_one_rank", 5);
  expect_steady_epochs_of_the_run(s, 5);
  EXPECT_EQ(to_json(s)["steady_epochs"]["count"], 4);
}

TEST(RunSummary, SteadyEpochsOfTwoRanksRoundTripToTheSameText) {
  const RunSummary s = expect_same_text_after_a_round_trip("--devices 2", "run_summary_steady_two_ranks", 4);
  expect_steady_epochs_of_the_run(s, 4);
}

}  // namespace
}  // namespace ddp
