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

// The band predict gives a configuration it did not run is what the doctor claims for it: the
// median of `runs` runs of config across the hosts (in dir/<label><i>) must lie inside it. The
// band is the model's largest error on the doctor's runs nearest the configuration plus 25 % per
// e-fold away from them; that error must stay under kWorstFitError, or the band says little
// (seen here: 2.9 to 14.7 % over eight predictions from five fits).
constexpr double kWorstFitError = 0.25;

void expect_prediction_holds(const fs::path& dir, const std::string& login, const std::string& config,
                             const std::string& label, int runs) {
  const auto predict = testing::run_command(
      std::string(DDPSCOPE_BINARY) + " predict --json --from ddpscope_logs/version_0/doctor.json" + config,
      dir / "doctor");
  ASSERT_EQ(predict.exit_code, 0) << predict.err;
  const nlohmann::json answer = nlohmann::json::parse(predict.out);
  const double predicted = answer["prediction"]["wall_seconds"].get<double>();
  ASSERT_TRUE(answer["band"].is_object()) << predict.out;
  const double band = answer["band"]["relative"].get<double>();
  EXPECT_LE(answer["band"]["fit_error"].get<double>(), kWorstFitError) << config << ": " << answer["band"].dump();
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
  EXPECT_NEAR(median, predicted, band * predicted)
      << config << ": predicted " << predicted << " s +- " << 100 * band << " %; runs " << walls.front() << " to "
      << walls.back() << " s, median " << median << "; band " << answer["band"].dump();
}

// Measured (docs/interconnects.md): at batch 128, fits here gave -8.3 to +23.0 % against medians
// of five runs, and a clean-clone CI run +17.5 %; at batch 32 -14 to +9.5 %. Runs of one
// configuration spread by up to 15 % on a shared machine, and so do the doctor's own, so a fixed
// bound either fails on another machine or says nothing; the band is what a user is told to
// expect: for batch 128, half the
// doctor's 256 and twice its batch-64 ablation, the fit's error there (5 % at least) plus 17 %;
// for batch 32, half the batch-64 ablation and twice the batch-16 one, the same.
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
