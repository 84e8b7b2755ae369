#include "doctor/workload_counts.h"

#include <gtest/gtest.h>

#include "train/config/option_json.h"

#include <numeric>

#include "ddpscope/config.h"
#include "ddpscope/error.h"
#include "train/config/options.h"
#include "train/config/run_config.h"
#include "train/records/run_summary.h"

namespace ddp {
namespace {

WorkloadConfig seed(int devices, int64_t accumulate) {
  WorkloadConfig c;  // the seed's defaults: 5000 samples, batch 256, 10-256x3-1, 200 epochs
  c.devices = devices;
  c.accumulate_grad_batches = accumulate;
  return c;
}

TEST(WorkloadCounts, SeedOnThreeDevicesPadsAndStepsOnTheLastBatch) {
  const WorkloadCounts n = count_workload(seed(3, 3));
  EXPECT_EQ(n.samples_per_rank, 1667);      // ceil(5000 / 3), the sampler pads by one sample
  EXPECT_EQ(n.micro_batches_per_epoch, 7);  // 6 of 256 and one of 131
  EXPECT_EQ(n.train_samples_per_epoch, 1667);
  EXPECT_EQ(1667 - 6 * 256, 131);
  EXPECT_EQ(n.optimizer_steps_per_epoch, 3);  // after micro-batches 3, 6 and the last (7)
  EXPECT_EQ(n.syncs_per_epoch, 3);
  EXPECT_EQ(n.optimizer_steps, 600);
  EXPECT_EQ(n.logging_events, 12);  // 600 / 50
  EXPECT_EQ(n.validations, 200);
  EXPECT_EQ(n.val_samples_rank0, 1667);
  EXPECT_EQ(n.val_batches_rank0, 7);
}

TEST(WorkloadCounts, SeedOnOneDevice) {
  const WorkloadCounts n = count_workload(seed(1, 3));
  EXPECT_EQ(n.samples_per_rank, 5000);
  EXPECT_EQ(n.micro_batches_per_epoch, 20);  // 19 of 256 and one of 136
  EXPECT_EQ(n.optimizer_steps_per_epoch, 7);
  EXPECT_EQ(n.syncs_per_epoch, 0);  // nothing to reduce
  EXPECT_EQ(n.optimizer_steps, 1400);
  EXPECT_EQ(n.logging_events, 28);
  EXPECT_EQ(n.val_batches_rank0, 20);
}

TEST(WorkloadCounts, SeedModelFlopsParametersAndOneBucket) {
  const WorkloadCounts n = count_workload(seed(2, 1));
  EXPECT_EQ(n.parameters, 134657);
  EXPECT_DOUBLE_EQ(n.forward_flops_per_sample, 2.0 * (10 * 256 + 2 * 256 * 256 + 256));
  // forward + dW everywhere + dX except the first layer: 204.34 MFLOP per micro-batch of 256
  EXPECT_DOUBLE_EQ(n.training_flops_per_sample, 798208.0);
  EXPECT_NEAR(n.training_flops_per_sample * 256, 204.34e6, 0.01e6);
  ASSERT_EQ(n.bucket_bytes.size(), 1u);  // under PyTorch's 1 MiB first bucket
  EXPECT_EQ(n.bucket_bytes[0], 538628);
}

// The seed's 4 linear layers on a GPU (src/gpu/train_step_gpu_cuda.cpp): per micro-batch the
// batch's generation, 4 forward GEMMs and 3 ReLUs, the loss, 4 ReLU/bias-gradient kernels, 4
// dW and 3 dX GEMMs; per step the memset, Adam and the cursor; per validation batch
// 1 + 4 + 3 + 1.
TEST(WorkloadCounts, SeedKernelLaunchesOnAGpu) {
  const WorkloadCounts n = count_workload(seed(1, 3));
  EXPECT_EQ(n.kernels_per_micro_batch, 20);
  EXPECT_EQ(n.kernels_per_optimizer_step, 3);
  EXPECT_EQ(n.kernels_per_val_batch, 9);
  // 200 epochs of 20 micro-batches and 7 steps, then 200 validations of 20 batches
  EXPECT_EQ(n.kernels, 200 * (20 * 20 + 7 * 3) + 200 * 20 * 9);
}

TEST(WorkloadCounts, SmallBucketCapSplitsTheGradientsByLayer) {
  WorkloadConfig c = seed(2, 1);
  c.bucket_cap_mb = 0.3;  // 314,572 B: one 256x256 layer (263,168 B) per bucket
  const WorkloadCounts n = count_workload(c);
  EXPECT_GT(n.bucket_bytes.size(), 1u);
  EXPECT_EQ(std::accumulate(n.bucket_bytes.begin(), n.bucket_bytes.end(), int64_t{0}), 538628);
}

TEST(WorkloadCounts, LoggingEventsCountOptimizerSteps) {
  WorkloadConfig c = seed(3, 3);
  c.epochs = 5;
  c.log_every_n_steps = 7;
  EXPECT_EQ(count_workload(c).logging_events, 2);  // 15 steps
  c.log_every_n_steps = 16;
  EXPECT_EQ(count_workload(c).logging_events, 0);
}

TEST(WorkloadCounts, ValidationSplitsWithoutPadding) {
  EXPECT_EQ(validation_samples_for_rank(5000, 3, 0), 1667);
  EXPECT_EQ(validation_samples_for_rank(5000, 3, 1), 1667);
  EXPECT_EQ(validation_samples_for_rank(5000, 3, 2), 1666);
  EXPECT_EQ(validation_samples_for_rank(5000, 2, 1), 2500);
  EXPECT_EQ(validation_samples_for_rank(2, 3, 2), 0);
  WorkloadConfig c = seed(2, 1);
  c.epochs = 10;
  c.check_val_every_n_epoch = 3;
  const WorkloadCounts n = count_workload(c);
  EXPECT_EQ(n.validations, 3);
  EXPECT_EQ(n.val_batches_rank0, 10);  // 2500 / 256
}

TEST(WorkloadCounts, SyncEveryMicroBatchAndLimitTrainBatches) {
  WorkloadConfig c = seed(3, 3);
  c.sync_every_micro_batch = true;
  EXPECT_EQ(count_workload(c).syncs_per_epoch, 7);
  c.sync_every_micro_batch = false;
  c.limit_train_batches = {.count = 4};
  WorkloadCounts n = count_workload(c);
  EXPECT_EQ(n.micro_batches_per_epoch, 4);
  EXPECT_EQ(n.train_samples_per_epoch, 4 * 256);
  EXPECT_EQ(n.optimizer_steps_per_epoch, 2);
  c.limit_train_batches = {.fraction = 0.5};
  n = count_workload(c);
  EXPECT_EQ(n.micro_batches_per_epoch, 3);  // floor(7 * 0.5)
}

TEST(WorkloadCounts, RejectsOutOfRangeConfigurations) {
  WorkloadConfig c = seed(0, 1);
  EXPECT_THROW(count_workload(c), UsageError);
  c = seed(1, 0);
  EXPECT_THROW(count_workload(c), UsageError);
  c = seed(1, 1);
  c.batch_size = 0;
  EXPECT_THROW(count_workload(c), UsageError);
  c = seed(1, 1);
  c.hidden_layers = -1;
  EXPECT_THROW(count_workload(c), UsageError);
}

TEST(WorkloadCounts, ReadsASummary) {
  RunSummary summary;
  summary.world_size = 3;
  summary.epochs = 4;
  const OptionTexts options = {{"input_dim", "10"},
                               {"hidden_size", "128"},
                               {"hidden_layers", "2"},
                               {"output_dim", "1"},
                               {"dataset_size", "1000"},
                               {"batch_size", "64"},
                               {"max_epochs", "200"},
                               {"accumulate_grad_batches", "3"},
                               {"check_val_every_n_epoch", "1"},
                               {"limit_train_batches", "1.0"},
                               {"log_every_n_steps", "50"},
                               {"devices", "auto"},
                               {"bucket_cap_mb", "25"},
                               {"sync_every_micro_batch", "false"},
                               {"monitor_mode", "per-step"}};
  summary.config = typed_config(options, "summary.json config");
  const WorkloadConfig w = workload_from_summary(summary);
  EXPECT_EQ(w.devices, 3);
  EXPECT_EQ(w.epochs, 4);  // what completed, not max_epochs
  EXPECT_EQ(w.hidden_size, 128);
  EXPECT_EQ(w.accumulate_grad_batches, 3);
  EXPECT_FALSE(w.limit_train_batches.count);
  EXPECT_TRUE(w.monitor_per_step);
  EXPECT_FALSE(w.on_gpu);  // a summary from before the GPU engine: a CPU's
  EXPECT_TRUE(w.cuda_graph);

  RunSummary gpu = summary;
  gpu.accelerator = Accelerator::kCuda;
  OptionTexts on_gpu = options;
  on_gpu.emplace_back("accelerator", "auto");  // what was asked; the summary says what ran
  on_gpu.emplace_back("no_cuda_graph", "true");
  gpu.config = typed_config(on_gpu, "summary.json config");
  const WorkloadConfig g = workload_from_summary(gpu);
  EXPECT_TRUE(g.on_gpu);
  EXPECT_FALSE(g.cuda_graph);

  // A value or an option this version cannot read is refused where the file is read, naming it.
  OptionTexts bad = options;
  bad[5].second = "big";  // batch_size
  EXPECT_THROW(typed_config(bad, "summary.json config"), DataError);
  bad = options;
  bad.emplace_back("no_such_option", "1");
  EXPECT_THROW(typed_config(bad, "summary.json config"), DataError);
  RunSummary unknown = summary;
  unknown.config.reset();  // a library user's Trainer, given no options
  EXPECT_THROW(workload_from_summary(unknown), DataError);
}

// The seed's configuration with --limit-train-batches given as typed.
Config seed_with_limit(const std::string& limit) {
  Config config;
  apply_option(config, "limit-train-batches", limit);
  return config;
}

TEST(WorkloadFor, LimitTrainBatchesAsACountOrAFractionGivesItsOwnWorkload) {
  // One device: 5000 samples in 20 micro-batches of 256 (19 full, one of 136).
  const WorkloadConfig count = workload_for(seed_with_limit("3"), 1);
  EXPECT_TRUE(count.limit_train_batches.count);
  EXPECT_EQ(count_workload(count).micro_batches_per_epoch, 3);
  EXPECT_EQ(count_workload(count).train_samples_per_epoch, 3 * 256);
  const WorkloadConfig half = workload_for(seed_with_limit("0.5"), 1);
  EXPECT_FALSE(half.limit_train_batches.count);
  EXPECT_EQ(count_workload(half).micro_batches_per_epoch, 10);
  // 1.0 is the whole epoch, not one batch.
  const WorkloadConfig whole = workload_for(seed_with_limit("1.0"), 1);
  EXPECT_FALSE(whole.limit_train_batches.count);
  EXPECT_EQ(count_workload(whole).micro_batches_per_epoch, 20);
  EXPECT_EQ(count_workload(whole).train_samples_per_epoch, 5000);
  // A count of 1 is one batch.
  EXPECT_EQ(count_workload(workload_for(seed_with_limit("1"), 1)).micro_batches_per_epoch, 1);
}

TEST(WorkloadFor, TakesTheDevicesAskedAndEveryWorkloadOption) {
  Config config;
  apply_preset(config, "seed");  // 3 devices, accumulation 3
  apply_option(config, "monitor-mode", "per-step");
  apply_option(config, "bucket-cap-mb", "0.5");
  const WorkloadConfig w = workload_for(config, 2);
  EXPECT_EQ(w.devices, 2);  // the run's, not the configuration's 3
  EXPECT_EQ(w.accumulate_grad_batches, 3);
  EXPECT_TRUE(w.monitor_per_step);
  EXPECT_DOUBLE_EQ(w.bucket_cap_mb, 0.5);
}

// The typed path and the file path (a summary's "config", as the trainer writes it) agree on
// every workload field, for each form of limit_train_batches.
TEST(WorkloadFor, AgreesWithTheConfigAsWrittenToSummaryJson) {
  for (const char* limit : {"3", "0.5", "1.0", "1"}) {
    Config config = seed_with_limit(limit);
    apply_option(config, "accumulate-grad-batches", "3");
    apply_option(config, "sync-every-micro-batch", "true");
    const WorkloadConfig typed = workload_for(config, 2);
    const Config written = typed_config(options_from_json(config_json(resolved_options(config))), "config");
    const WorkloadConfig read = workload_for(written, 2);
    EXPECT_EQ(typed.limit_train_batches.count, read.limit_train_batches.count) << limit;
    EXPECT_DOUBLE_EQ(typed.limit_train_batches.fraction, read.limit_train_batches.fraction) << limit;
    const WorkloadCounts a = count_workload(typed), b = count_workload(read);
    EXPECT_EQ(a.micro_batches_per_epoch, b.micro_batches_per_epoch) << limit;
    EXPECT_EQ(a.optimizer_steps, b.optimizer_steps) << limit;
    EXPECT_EQ(a.syncs_per_epoch, b.syncs_per_epoch) << limit;
    EXPECT_EQ(a.bucket_bytes, b.bucket_bytes) << limit;
    EXPECT_EQ(typed.sync_every_micro_batch, read.sync_every_micro_batch) << limit;
    EXPECT_EQ(typed.monitor_per_step, read.monitor_per_step) << limit;
  }
}

}  // namespace
}  // namespace ddp
