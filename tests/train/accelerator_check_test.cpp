// What the GPU engine cannot train (a program's own module or dataset: the CLI's datasets
// are all the engine's) is refused for cuda on any machine, before a GPU is looked for, and
// keeps auto on CPU.
#include "train/config/accelerator_check.h"

#include <gtest/gtest.h>

#include "ddpscope/error.h"

namespace ddp {
namespace {

TEST(AcceleratorCheck, CudaRefusesAProgramsOwnModuleOrDataSayingWhatItTrains) {
  TrainerOptions options;
  options.accelerator = Accelerator::kCuda;
  try {
    trains_on_gpu(options, /*regression_on_gpu_data=*/false);
    FAIL() << "a program's own module was accepted for cuda";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(),
                 "--accelerator cuda: the GPU engine trains the built-in regression task on --data random, teacher or "
                 "csv:PATH (it makes their samples on the GPU); train custom modules and datasets with --accelerator "
                 "cpu");
  }
  options.accelerator = Accelerator::kAuto;
  EXPECT_FALSE(trains_on_gpu(options, false));
  options.accelerator = Accelerator::kCpu;
  EXPECT_FALSE(trains_on_gpu(options, true));
}

// The GPU engine's ranks average once per optimizer step: the no_sync ablation is the CPU's.
TEST(AcceleratorCheck, CudaRefusesSyncEveryMicroBatchAndAutoKeepsItOnCpu) {
  TrainerOptions options;
  options.accelerator = Accelerator::kCuda;
  options.sync_every_micro_batch = true;
  try {
    trains_on_gpu(options, /*regression_on_gpu_data=*/true);
    FAIL() << "--sync-every-micro-batch was accepted for cuda";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(),
                 "--accelerator cuda: --sync-every-micro-batch ablates the CPU reducer's no_sync, and the GPU "
                 "engine's ranks average once per optimizer step; run that ablation with --accelerator cpu");
  }
  options.accelerator = Accelerator::kAuto;
  EXPECT_FALSE(trains_on_gpu(options, true));
}

TEST(AcceleratorCheck, TheGpuMakesTheCommandLinesDatasets) {
  for (const char* data : {"random", "teacher", "csv:data/train.csv"}) EXPECT_TRUE(gpu_makes_data(data)) << data;
  for (const char* data : {"", "csv", "Random", "mnist"}) EXPECT_FALSE(gpu_makes_data(data)) << data;
}

}  // namespace
}  // namespace ddp
