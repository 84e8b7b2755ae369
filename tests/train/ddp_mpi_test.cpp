// Data-parallel training as PyTorch DDP under Lightning defines it, run under mpirun with
// 2 and 3 ranks: the same mathematics as one rank with the global batch, identical
// parameters on every rank, no_sync during accumulation, one allreduce per bucket.
#include <gtest/gtest.h>
#include "dist/mpi_c.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "ddpscope/trainer.h"
#include "dist/bucket_plan.h"
#include "support/mpi_world.h"
#include "support/run_command.h"
#include "train/config/run_config.h"
#include "train/loop/regression_task.h"
#include "train/records/run_summary.h"

namespace ddp {
namespace {

using testing::world_rank;
using testing::world_size;

// 600 samples divide evenly over 2 and 3 ranks, so no DistributedSampler padding.
Config ddp_config(const std::string& test, int devices, int64_t batch) {
  Config c;
  c.model = {.input_dim = 6, .hidden_size = 24, .hidden_layers = 2, .output_dim = 2};
  c.data.data = "teacher";
  c.data.dataset_size = 600;
  c.data.batch_size = batch;
  c.data.shuffle = false;
  c.trainer.strategy = devices > 1 ? Strategy::kDdp : Strategy::kSingle;
  c.trainer.devices = devices;
  c.trainer.max_epochs = 100;
  c.trainer.max_steps = 50;
  c.trainer.progress_bar = ProgressMode::kOff;
  c.trainer.logger = {};  // none
  // Each rank its own folder: the single-rank reference runs on every rank.
  c.trainer.default_root_dir =
      (std::filesystem::temp_directory_path() /
       ("ddpscope_ddp_" + test + "_" + std::to_string(world_size()) + "_" + std::to_string(world_rank())))
          .string();
  return c;
}

std::vector<float> train_params(const Config& c, int64_t* allreduce_calls = nullptr) {
  RegressionDataModule data(c);
  RegressionModel model(c);
  Trainer trainer(c.trainer, join_world(c.trainer));
  trainer.fit(model, data);
  if (allreduce_calls) *allreduce_calls = trainer.stats().gradient_allreduces;
  const auto p = model.network().params();
  return {p.begin(), p.end()};
}

double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(double{a[i]} - b[i]));
    scale = std::max(scale, std::abs(double{b[i]}));
  }
  return diff / scale;
}

struct Case {
  OptimizerKind optimizer;
  int64_t accumulate;
};

class Equivalence : public ::testing::TestWithParam<Case> {};

TEST_P(Equivalence, NRanksWithBatchBMatchOneRankWithBatchNB) {
  const int n = world_size();
  constexpr int64_t kBatch = 10;
  Config distributed = ddp_config("equiv", n, kBatch);
  Config single = ddp_config("equiv_single", 1, n * kBatch);
  for (Config* c : {&distributed, &single}) {
    c->optimizer.kind = GetParam().optimizer;
    c->optimizer.lr = GetParam().optimizer == OptimizerKind::kSgd ? 0.05 : 0.003;
    c->optimizer.momentum = GetParam().optimizer == OptimizerKind::kSgd ? 0.9 : 0.0;
    c->trainer.accumulate_grad_batches = GetParam().accumulate;
  }
  const std::vector<float> a = train_params(distributed);
  const std::vector<float> b = train_params(single);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_LE(relative_difference(a, b), 1e-5);
  // Training moved the parameters: the comparison is not of two untouched initialisations.
  Config untrained = single;
  untrained.trainer.max_steps = 1;
  EXPECT_GT(relative_difference(train_params(untrained), b), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Ddp, Equivalence,
                         ::testing::Values(Case{OptimizerKind::kAdam, 1}, Case{OptimizerKind::kAdam, 3},
                                           Case{OptimizerKind::kSgd, 1}, Case{OptimizerKind::kSgd, 2}));

// Records a checksum of the parameters at every training step: the state after the
// previous optimizer step. Built from a seed of its own per rank.
class ParamWatcher : public RegressionModel {
 public:
  ParamWatcher(const Config& c, uint64_t init_seed) : RegressionModel(with_seed(c, init_seed)) {}
  Loss training_step(const Batch& batch, int64_t batch_idx) override {
    const std::span<const float> p = network().params();
    double sum = 0, squares = 0;
    for (float v : p) {
      sum += v;
      squares += double{v} * v;
    }
    checksums.push_back(sum);
    checksums.push_back(squares);
    return RegressionModel::training_step(batch, batch_idx);
  }
  std::vector<double> checksums;

 private:
  static Config with_seed(Config c, uint64_t seed) {
    c.data.seed = seed;
    return c;
  }
};

TEST(Ddp, EveryRankHoldsRankZerosParametersAfterEveryStepEvenFromDifferentSeeds) {
  Config c = ddp_config("identical", world_size(), 16);
  c.data.shuffle = true;
  c.trainer.max_steps = 30;
  c.trainer.accumulate_grad_batches = 2;
  RegressionDataModule data(c);
  ParamWatcher model(c, /*init_seed=*/100 + world_rank());  // different initialisations
  Trainer trainer(c.trainer, join_world(c.trainer));
  trainer.fit(model, data);
  const int count = static_cast<int>(model.checksums.size());
  ASSERT_GE(count, 2 * 30);  // at least one micro-batch per optimizer step
  int max_count = 0;
  MPI_Allreduce(&count, &max_count, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  ASSERT_EQ(count, max_count);
  std::vector<double> all(count * world_size());
  MPI_Allgather(model.checksums.data(), count, MPI_DOUBLE, all.data(), count, MPI_DOUBLE, MPI_COMM_WORLD);
  for (int r = 1; r < world_size(); ++r) {
    for (int i = 0; i < count; ++i) ASSERT_EQ(all[r * count + i], all[i]) << "rank " << r << " value " << i;
  }
  // Rank zero's own initialisation survived the broadcast.
  if (world_rank() == 0) {
    RegressionModel fresh([&] {
      Config s = c;
      s.data.seed = 100;
      return s;
    }());
    const auto p = fresh.network().params();
    EXPECT_EQ(std::accumulate(p.begin(), p.end(), 0.0), model.checksums[0]);
  }
}

TEST(Ddp, AllreduceCallsAreOptimizerStepsTimesBucketsAndEveryMicroBatchWithoutNoSync) {
  Config c = ddp_config("calls", world_size(), 8);
  c.trainer.accumulate_grad_batches = 3;
  c.trainer.max_steps = 20;
  c.trainer.bucket_cap_mb = 2000.0 / (1 << 20);  // ~2 KB: several buckets
  RegressionModel probe(c);
  const std::size_t cap = static_cast<std::size_t>(c.trainer.bucket_cap_mb * (1 << 20));
  const std::size_t buckets =
      plan_buckets(probe.network().layers(), cap, std::min(cap, kDefaultFirstBucketCapBytes)).size();
  ASSERT_GT(buckets, 2u);

  int64_t calls = 0;
  train_params(c, &calls);
  EXPECT_EQ(calls, 20 * static_cast<int64_t>(buckets));

  c.trainer.sync_every_micro_batch = true;
  train_params(c, &calls);
  // 600 / world / 8 micro-batches per epoch; 20 steps of 3 reach into a second epoch
  // whose count depends on the epoch's length, so count micro-batches directly.
  const int64_t per_epoch = (600 / world_size() + 7) / 8;
  const int64_t steps_per_epoch = (per_epoch + 2) / 3;
  const int64_t full_epochs = 20 / steps_per_epoch, rest_steps = 20 % steps_per_epoch;
  const int64_t micro_batches = full_epochs * per_epoch + rest_steps * 3;
  EXPECT_EQ(calls, micro_batches * static_cast<int64_t>(buckets));

  c.trainer.sync_every_micro_batch = false;
  c.trainer.no_overlap = true;  // one allreduce of the whole buffer per step
  train_params(c, &calls);
  EXPECT_EQ(calls, 20);
}

TEST(Ddp, ValidationLossIsTheExactGlobalMean) {
  // 7 samples over 2 or 3 ranks: uneven shards; the reduced mean must equal one rank's.
  Config c = ddp_config("val", world_size(), 4);
  c.data.dataset_size = 7;
  c.trainer.max_steps = -1;
  c.trainer.max_epochs = 1;
  c.trainer.limit_train_batches = {.count = 1};
  c.optimizer.lr = 1e-30;  // the parameters stay (almost exactly) at their initialisation
  RegressionDataModule data(c);
  RegressionModel model(c);
  Trainer trainer(c.trainer, join_world(c.trainer));
  trainer.fit(model, data);
  Config s = ddp_config("val_single", 1, 7);
  s.data.dataset_size = 7;
  s.trainer.max_steps = -1;
  s.trainer.max_epochs = 1;
  s.optimizer.lr = 1e-30;
  RegressionDataModule data1(s);
  RegressionModel model1(s);
  Trainer single(s.trainer, join_world(s.trainer));
  single.fit(model1, data1);
  ASSERT_TRUE(trainer.stats().final_val_loss && single.stats().final_val_loss);
  EXPECT_NEAR(*trainer.stats().final_val_loss, *single.stats().final_val_loss, 1e-6);
}

}  // namespace
}  // namespace ddp
