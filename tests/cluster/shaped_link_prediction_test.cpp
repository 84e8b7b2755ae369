// The doctor's prediction checked on a shaped link: it fits its model across the
// two namespace hosts at 1 Gbit/s in both directions, then predicts a configuration it did
// not run (another batch size, more epochs) at 2 devices. Runs alone: other tests' processes
// on the two cores would move the runs and the fit apart. Not under the sanitizers, whose
// instrumented compute is not the one to predict.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/local_cluster.h"
#include "support/run_command.h"
#include "support/sanitizer_build.h"

namespace ddp {
namespace {

namespace fs = std::filesystem;
using testing::kOptions;
using testing::LocalCluster;

double wall_seconds(const testing::CommandResult& run, const fs::path& dir) {
  EXPECT_EQ(run.exit_code, 0) << run.err << run.out;
  return testing::summary(dir)["wall_seconds"].get<double>();
}

// The median of `runs` runs of config across the hosts (in dir/<label><i>), against the
// prediction for it.
void expect_prediction_holds(const fs::path& dir, const std::string& login, const std::string& config,
                             const std::string& label, int runs) {
  const auto predict = testing::run_command(
      std::string(DDPSCOPE_BINARY) + " predict --json --from ddpscope_logs/version_0/doctor.json" + config,
      dir / "doctor");
  ASSERT_EQ(predict.exit_code, 0) << predict.err;
  const double predicted = nlohmann::json::parse(predict.out)["prediction"]["wall_seconds"].get<double>();
  std::vector<double> walls;
  for (int i = 0; i < runs; ++i) {
    const fs::path run_dir = dir / (label + std::to_string(i));
    walls.push_back(wall_seconds(testing::run_command("DDPSCOPE_MPIRUN_ARGS=\"" + kOptions + "\" " + login + " train" +
                                                          config + " --progress-bar off --logger none",
                                                      run_dir),
                                 run_dir));
  }
  std::sort(walls.begin(), walls.end());
  const double median = walls[walls.size() / 2];
  EXPECT_NEAR(predicted / median, 1.0, 0.15) << config << ": predicted " << predicted << " s; runs " << walls.front()
                                             << " to " << walls.back() << " s, median " << median;
}

// Measured (docs/interconnects.md): at batch 128, six fits gave +0.1, +11.5, +4.5, +5.1, +3.9
// and +4.5 % against medians of five runs; at batch 32 (790 synchronisations, each about
// 5.4 ms in the runs against the alpha-beta line's 4.5 ms) -5.5, -7.5 and -6.1 %. Runs of one
// configuration spread by up to 15 % on this shared machine, and so do the doctor's own, so
// the bound is 15 %: the 10 % held in 8 of those 9 (and -14 % in an earlier fit at batch 32).
// Those fits ran the doctor for 3 epochs; a clean-clone CI run then fitted the ranks' contention
// at 0.51 from its 2-device run's 3 short epochs and over-predicted batch 128 by 17.3 % (compute
// 0.38 s against 0.24 s). The doctor now runs 6 epochs: +5.6 % and -8.3 %, then +5.7 % and -6.2 %,
// in two fits here.
TEST_F(LocalCluster, DoctorsPredictionOnAShapedLinkMatchesTheRun) {
  if (testing::kSanitizerBuild) GTEST_SKIP() << "a prediction of time is checked in the release build";
  testing::shape("1gbit", "1gbit");
  const fs::path dir = testing::fresh_dir("cluster_prediction");
  const std::string login = "ip netns exec ddpscope-login " + std::string(DDPSCOPE_BINARY);
  const auto doctor = testing::run_command(
      login + " doctor --devices 1,2 --num-nodes 2 --max-epochs 6 --mpirun-args \"" + kOptions + "\"", dir / "doctor");
  ASSERT_EQ(doctor.exit_code, 0) << doctor.err << doctor.out;
  // Batch sizes and a length the doctor did not run: larger steps, and many small ones.
  expect_prediction_holds(dir, login, " --devices 2 --num-nodes 2 --batch-size 128 --max-epochs 10", "b128_", 5);
  expect_prediction_holds(dir, login, " --devices 2 --num-nodes 2 --batch-size 32 --max-epochs 10", "b32_", 3);
}

}  // namespace
}  // namespace ddp
