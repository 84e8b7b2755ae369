// RunSummary is summary.json as typed data: it reads back what it writes, field for field,
// and a summary.json that ddpscope wrote is read and written again to the same text.
#include "train/records/run_summary.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <string>

#include "ddpscope/config.h"
#include "ddpscope/error.h"
#include "support/run_command.h"
#include "train/config/options.h"
#include "train/config/run_config.h"

namespace ddp {
namespace {

// Every field set, with the values a 2-rank run of the seed would have.
RunSummary two_rank_summary() {
  Config config;
  apply_preset(config, "seed");
  apply_option(config, "limit-train-batches", "0.5");
  apply_option(config, "lr", "0.001");
  RunSummary s;
  s.config = config;
  s.accelerator = Accelerator::kCpu;
  s.strategy = Strategy::kDdp;
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
  s.sched_per_rank = {{.run_seconds = 2.01,
                       .wait_seconds = 0.0125,
                       .wait_share = 0.0125 / 2.0225,
                       .voluntary_switches = 310,
                       .involuntary_switches = 4,
                       .steal_seconds = 0.0},
                      {.run_seconds = 1.1,
                       .wait_seconds = 1.05,
                       .wait_share = 1.05 / 2.15,
                       .voluntary_switches = 298,
                       .involuntary_switches = 1021,
                       .steal_seconds = 0.25}};
  s.cores_per_rank = {{0}, {1, 3}};
  s.host_load = {
      {.host = "node1", .cores = 4, .busy_core_seconds = 3.5, .ranks_cpu_seconds = 2.25, .interrupt_core_seconds = 0.5},
      {.host = "node2", .cores = 4, .busy_core_seconds = 2.0, .ranks_cpu_seconds = 2.1}};
  s.arrivals.collectives = 12;
  s.arrivals.steps = 12;
  s.arrivals.dropped = 2;
  s.arrivals.per_rank = {{.times_last = 1, .lag_ns = 40'000, .wait_ns = 9'100'000, .caused_wait_ns = 40'000},
                         {.times_last = 11, .lag_ns = 9'100'000, .wait_ns = 40'000, .caused_wait_ns = 9'060'000}};
  s.arrivals.straggler = Straggler{
      .rank = 1, .last_share = 11.0 / 12, .late_seconds = 9.06e-3 / 11, .cost_seconds_per_step = 9.06e-3 / 12};
  s.arrivals.lag_ms_per_rank = {{0.0, 0.04}, {0.75, 0.76}};
  s.warnings = {"2 arrivals at gradient collectives did not fit the buffer and were dropped"};
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

  RunSummary no_steal = s;  // cores that /proc/stat does not list
  no_steal.sched_per_rank[1].steal_seconds.reset();
  EXPECT_TRUE(to_json(no_steal)["sched_per_rank"][1]["steal_seconds"].is_null());
  EXPECT_TRUE(read_back(to_json(no_steal)) == no_steal);
  EXPECT_FALSE(read_back(to_json(no_steal)) == s);
  RunSummary no_proc = s;  // a rank could not read /proc: no list, and the run still succeeded
  no_proc.sched_per_rank.clear();
  EXPECT_TRUE(read_back(to_json(no_proc)) == no_proc);
  EXPECT_FALSE(read_back(to_json(no_proc)) == s);
  RunSummary no_host_load = s;  // a rank could not read /proc/stat: left out of the file
  no_host_load.host_load.clear();
  EXPECT_FALSE(to_json(no_host_load).contains("host_load"));
  EXPECT_TRUE(read_back(to_json(no_host_load)) == no_host_load);
  EXPECT_FALSE(read_back(to_json(no_host_load)) == s);
  RunSummary no_straggler = s;
  no_straggler.arrivals.straggler.reset();
  EXPECT_TRUE(to_json(no_straggler)["arrivals"]["straggler"].is_null());
  EXPECT_TRUE(read_back(to_json(no_straggler)) == no_straggler);
  EXPECT_FALSE(read_back(to_json(no_straggler)) == s);
}

TEST(RunSummary, WritesEachRanksSchedStatsAndCores) {
  const nlohmann::ordered_json j = to_json(two_rank_summary());
  ASSERT_EQ(j["sched_per_rank"].size(), 2u);
  EXPECT_EQ(j["sched_per_rank"][1]["involuntary_switches"], 1021);
  EXPECT_DOUBLE_EQ(j["sched_per_rank"][1]["wait_share"].get<double>(), 1.05 / 2.15);
  EXPECT_DOUBLE_EQ(j["sched_per_rank"][1]["steal_seconds"].get<double>(), 0.25);
  EXPECT_EQ(j["cores_per_rank"], nlohmann::ordered_json::parse("[[0], [1, 3]]"));
  // What other processes took: the busy core time less the interrupt work and the ranks' own,
  // never below 0.
  EXPECT_DOUBLE_EQ(j["host_load"][0]["interrupt_core_seconds"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["host_load"][0]["others_core_seconds"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(j["host_load"][1]["others_core_seconds"].get<double>(), 0.0);
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
  Config config = *read_back(to_json(s)).config;
  EXPECT_EQ(config.trainer.accumulate_grad_batches, 3);
  EXPECT_EQ(config.preset, "seed");
  EXPECT_FALSE(config.trainer.limit_train_batches.count);
  EXPECT_DOUBLE_EQ(config.trainer.limit_train_batches.fraction, 0.5);
  for (const char* limit : {"1.0", "3", "1"}) {
    Config with;
    apply_option(with, "limit-train-batches", limit);
    s.config = with;
    config = *read_back(to_json(s)).config;
    EXPECT_EQ(config.trainer.limit_train_batches.count.has_value(), std::string(limit) != "1.0") << limit;
    EXPECT_EQ(resolved_options(config), resolved_options(with)) << limit;
  }
  // Read once, where the file is read: an option this version does not know is named there.
  nlohmann::ordered_json unknown = to_json(s);
  unknown["config"]["no_such_option"] = 1;
  try {
    read_back(unknown);
    FAIL();
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()).substr(0, 44), "summary.json config field \"no_such_option\": ");
  }
  // A library user's Trainer, given no options: "config" is {} and reads back as none.
  s.config.reset();
  EXPECT_EQ(to_json(s)["config"], nlohmann::ordered_json::object());
  EXPECT_FALSE(read_back(to_json(s)).config.has_value());
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
  bad["sched_per_rank"][0].erase("wait_share");
  EXPECT_EQ(message_for(bad), "summary.json sched_per_rank has no \"wait_share\"");
  bad = good;
  bad["cores_per_rank"][1] = {"one"};
  EXPECT_EQ(message_for(bad), "summary.json field \"cores_per_rank\" holds \"one\", expected core numbers");
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
RunSummary expect_same_text_after_a_round_trip(const std::string& options, const std::string& name, int world,
                                               int epochs = 2) {
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
  // Each rank's thread has its scheduler statistics, and each rank says where it ran. Its run
  // time may be 0: schedstat's moves at ticks and context switches (the kernel prints
  // sum_exec_runtime as the last of them left it), and these runs are shorter than a tick.
  EXPECT_EQ(s.sched_per_rank.size(), static_cast<std::size_t>(world));
  EXPECT_EQ(s.cores_per_rank.size(), static_cast<std::size_t>(world));
  for (int r = 0;
       r < std::min<int>({world, static_cast<int>(s.sched_per_rank.size()), static_cast<int>(s.cores_per_rank.size())});
       ++r) {
    EXPECT_GE(s.sched_per_rank[r].run_seconds, 0) << r;
    EXPECT_GE(s.sched_per_rank[r].wait_share, 0) << r;
    EXPECT_LE(s.sched_per_rank[r].wait_share, 1) << r;
    EXPECT_FALSE(s.cores_per_rank[r].empty()) << r;
  }
  // Arrivals at the gradient collectives: compared across ranks only when there are several.
  EXPECT_TRUE(s.warnings.empty());
  EXPECT_EQ(s.arrivals.per_rank.size(), world > 1 ? static_cast<std::size_t>(world) : 0u);
  EXPECT_EQ(s.arrivals.lag_ms_per_rank.size(), world > 1 ? static_cast<std::size_t>(world) : 0u);
  if (world > 1) {
    EXPECT_EQ(s.arrivals.steps, s.optimizer_steps_run);  // one bucket, one collective per step
    EXPECT_EQ(s.arrivals.collectives, s.arrivals.steps);
    EXPECT_EQ(s.arrivals.dropped, 0);
  } else {
    EXPECT_EQ(s.arrivals.collectives, 0);
  }
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
  expect_same_text_after_a_round_trip("--limit-train-batches 3 --lr 0.003", "run_summary_count", 1);
}

TEST(RunSummary, ATwoRankSummaryJsonRoundTripsToTheSameText) {
  expect_same_text_after_a_round_trip("--devices 2 --limit-train-batches 0.5 --accumulate-grad-batches 2",
                                      "run_summary_two_ranks", 2);
}

// The catalogue's block: every rank's thread census, read back; absent in an older file.
TEST(RunSummary, TheThreadCensusRoundTripsAndAnOlderSummaryHasNone) {
  RunSummary s = two_rank_summary();
  s.threads_per_rank = {{7, 2, 2}, {6, 2, 1}};
  const nlohmann::ordered_json j = to_json(s);
  EXPECT_EQ(j["threads_per_rank"][1].dump(), R"({"threads":6,"omp_threads":2,"blas_threads":1})");
  EXPECT_TRUE(read_back(j) == s);
  RunSummary other = s;
  other.threads_per_rank[0].omp_threads = 1;
  EXPECT_FALSE(read_back(j) == other);

  nlohmann::ordered_json older = j;
  older.erase("threads_per_rank");
  EXPECT_TRUE(read_back(older).threads_per_rank.empty());
  nlohmann::ordered_json bad = j;
  bad["threads_per_rank"][0]["omp_threads"] = "many";
  try {
    read_back(bad);
    ADD_FAILURE() << "read without an error";
  } catch (const DataError& e) {
    EXPECT_STREQ(e.what(), "summary.json threads_per_rank field \"omp_threads\" is \"many\", expected an integer");
  }
}

// How the ranks averaged: written, compared, and read as MPI (or none) from a summary older
// than the field.
TEST(RunSummary, TheGradientTransportRoundTripsAndAnOlderSummaryReadsAsMpi) {
  RunSummary s = two_rank_summary();
  s.gradient_transport = GradientTransport::kNccl;
  const nlohmann::ordered_json j = to_json(s);
  EXPECT_EQ(j["gradient_transport"], "nccl");
  EXPECT_TRUE(read_back(j) == s);
  RunSummary other = s;
  other.gradient_transport = GradientTransport::kMpi;
  EXPECT_FALSE(read_back(j) == other);
  nlohmann::ordered_json older = j;
  older.erase("gradient_transport");
  EXPECT_EQ(read_back(older).gradient_transport, GradientTransport::kMpi);
  older["world_size"] = 1;
  EXPECT_EQ(read_back(older).gradient_transport, GradientTransport::kNone);
}

TEST(RunSummary, EveryRankCountsItsThreadsNearTheEndOfTraining) {
  const auto dir = testing::fresh_dir("run_summary_threads");
  const auto r = testing::run_command(std::string(DDPSCOPE_BINARY) +
                                          " train --devices 2 --dataset-size 64 --batch-size 16 --hidden-size 8 "
                                          "--max-epochs 1 --loader-workers 1 --progress-bar off --version 0",
                                      dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const RunSummary s = read_back(
      nlohmann::ordered_json::parse(testing::read_text(dir / "ddpscope_logs" / "version_0" / "summary.json")));
  ASSERT_EQ(s.threads_per_rank.size(), 2u);
  for (const ThreadCensus& t : s.threads_per_rank) {
    EXPECT_GE(t.threads, 2);      // the training thread and its loader worker, at least
    EXPECT_EQ(t.omp_threads, 1);  // --threads-per-device 1
    EXPECT_EQ(t.blas_threads, 1);
  }
}

TEST(RunSummary, ARunOfTwoEpochsHasNoSteadyEpochsInItsFile) {
  const RunSummary s = expect_same_text_after_a_round_trip("", "run_summary_two_epochs", 1);
  EXPECT_EQ(s.steady_epochs, EpochSpread{});
  EXPECT_FALSE(to_json(s).contains("steady_epochs"));
}

TEST(RunSummary, SteadyEpochsOfOneRankRoundTripToTheSameText) {
  const RunSummary s = expect_same_text_after_a_round_trip("", "run_summary_steady_one_rank", 1, 5);
  expect_steady_epochs_of_the_run(s, 5);
  EXPECT_EQ(to_json(s)["steady_epochs"]["count"], 4);
}

TEST(RunSummary, SteadyEpochsOfTwoRanksRoundTripToTheSameText) {
  const RunSummary s = expect_same_text_after_a_round_trip("--devices 2", "run_summary_steady_two_ranks", 2, 4);
  expect_steady_epochs_of_the_run(s, 4);
}

}  // namespace
}  // namespace ddp
