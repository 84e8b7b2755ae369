// The catalogue's causes injected for real (docs/scaling-guide.md states each tolerance):
// real `ddpscope train` runs, read back as the doctor reads them, through the catalogue's
// rules; and the same runs without the cause get no such finding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "dist/launcher.h"
#include "doctor/findings_catalogue.h"
#include "doctor/workload_counts.h"
#include "support/run_command.h"
#include "train/config/run_config.h"

namespace ddp {
namespace {

using testing::fresh_dir;

// Small runs: a few seconds each, also under the sanitizers.
Config small_config() {
  Config c;
  c.data.dataset_size = 2048;
  c.data.batch_size = 64;
  c.model.hidden_size = 64;
  c.model.hidden_layers = 2;
  c.trainer.max_epochs = 3;
  c.trainer.logger = {};
  return c;
}

RunRecord train(const Config& config, int devices, const std::string& label) {
  RunRecord run =
      run_training(DDPSCOPE_BINARY, config, devices, config.trainer.max_epochs, label, fresh_dir("catalogue_" + label));
  EXPECT_TRUE(run.ok) << run.error;
  return run;
}

std::vector<Finding> catalogue_of(const std::vector<const RunRecord*>& runs) {
  FindingInputs in;
  in.device_runs = runs;
  std::vector<Finding> out;
  catalogue_findings(in, out);
  return out;
}

const Finding* titled(const std::vector<Finding>& findings, const std::string& part) {
  for (const Finding& f : findings) {
    if (f.title.find(part) != std::string::npos) return &f;
  }
  return nullptr;
}

// The fault-injection knob of the loader, set for the runs this scope starts.
class LoaderDelay {
 public:
  explicit LoaderDelay(int microseconds) {
    setenv("DDPSCOPE_LOADER_DELAY_US", std::to_string(microseconds).c_str(), 1);
  }
  ~LoaderDelay() { unsetenv("DDPSCOPE_LOADER_DELAY_US"); }
  LoaderDelay(const LoaderDelay&) = delete;
  LoaderDelay& operator=(const LoaderDelay&) = delete;
};

int64_t micro_batches(const RunRecord& run) {
  return count_workload(workload_from_summary(run.summary)).micro_batches_per_epoch * run.summary.epochs;
}

// Two ranks of two threads each on this machine's cores (two in CI): the configuration asks
// for more threads than cores, and the training threads measure the wait.
TEST(CatalogueInjected, OversubscribedThreadsAreFoundWithTheMeasuredWaitAndACleanRunIsNot) {
  const int cores = available_cores();
  // Oversubscribed, the run is many times slower (docs/scaling-guide.md): one short epoch.
  Config over = small_config();
  over.data.dataset_size = 512;
  over.trainer.max_epochs = 1;
  over.trainer.threads_per_device = cores;  // x 2 ranks: twice the cores
  const RunRecord run = train(over, 2, "oversubscribed");
  ASSERT_TRUE(run.ok);
  ASSERT_EQ(run.summary.threads_per_rank.size(), 2u);
  EXPECT_EQ(run.summary.threads_per_rank[0].omp_threads, cores);
  EXPECT_GT(run.summary.threads_per_rank[0].threads, 1);  // the training thread and at least the OpenMP team
  ASSERT_EQ(run.summary.sched_per_rank.size(), 2u);
  const double wait = (run.summary.sched_per_rank[0].wait_share + run.summary.sched_per_rank[1].wait_share) / 2;
  const std::vector<Finding> findings = catalogue_of({&run});
  const Finding* f = titled(findings, fmt::format("{} threads x 2 ranks on {} cores", cores, cores));
  ASSERT_NE(f, nullptr) << "mean wait share " << wait << (findings.empty() ? "" : ": " + findings[0].title);
  EXPECT_NE(f->title.find(fmt::format("each thread waited {:.0f} % of its time for a core", 100 * wait)),
            std::string::npos)
      << f->title;
  EXPECT_GT(f->cost_seconds, 0);

  Config clean = over;
  clean.trainer.threads_per_device = std::max(1, cores / 2);
  const RunRecord fair = train(clean, 2, "fair_threads");
  ASSERT_TRUE(fair.ok);
  EXPECT_EQ(titled(catalogue_of({&fair}), "threads x"), nullptr);
}

// A loader slowed down by D per batch (a real sleep in the thread that fills it, here the
// training thread): the finding's cost per micro-batch is within 0.5 D .. 2 D (the fill itself
// and a late wake-up on a busy machine add to D); without the delay, no finding. Without loader workers the
// clean run's data phase is the fill alone, which no other thread's scheduling can stretch.
TEST(CatalogueInjected, ASlowLoaderIsFoundWithItsCostPerMicroBatchAndAFastOneIsNot) {
  // 20 ms: a loaded machine wakes a sleeper a few ms late, which 2 D leaves room for.
  constexpr int kDelayUs = 20000;
  Config config = small_config();
  config.data.dataset_size = 512;  // 8 batches an epoch
  config.data.loader_workers = 0;
  RunRecord slow;
  {
    const LoaderDelay delay(kDelayUs);
    slow = train(config, 1, "slow_loader");
  }
  ASSERT_TRUE(slow.ok);
  const std::vector<Finding> findings = catalogue_of({&slow});
  const Finding* f = titled(findings, "Input starvation: rank 0");
  ASSERT_NE(f, nullptr) << (findings.empty() ? "no finding" : findings[0].title);
  EXPECT_NE(f->title.find("loading its batch in the training thread"), std::string::npos) << f->title;
  const double per_batch = f->cost_seconds / static_cast<double>(micro_batches(slow));
  EXPECT_GE(per_batch, 0.5 * kDelayUs * 1e-6) << f->title;
  EXPECT_LE(per_batch, 2.0 * kDelayUs * 1e-6) << f->title;

  const RunRecord fast = train(config, 1, "fast_loader");
  ASSERT_TRUE(fast.ok);
  const std::vector<Finding> clean = catalogue_of({&fast});
  const Finding* none = titled(clean, "Input starvation");
  EXPECT_EQ(none, nullptr) << none->title << "; " << none->detail;
}

TEST(CatalogueInjected, ABadLoaderDelayIsRefusedWithTheVariableNamed) {
  const auto dir = fresh_dir("catalogue_bad_delay");
  const auto r = testing::run_command("DDPSCOPE_LOADER_DELAY_US=soon " + std::string(DDPSCOPE_BINARY) +
                                          " train --dataset-size 64 --max-epochs 1 --progress-bar off",
                                      dir);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("DDPSCOPE_LOADER_DELAY_US='soon' is not a whole number of microseconds in [0, 10000000]"),
            std::string::npos)
      << r.err;
}

// Syncing every micro-batch of an accumulation of 3: three allreduces per optimizer step of a
// one-bucket gradient, measured (exactly 3 on full windows; the tolerance is the epochs' last,
// shorter window); with no_sync, one.
TEST(CatalogueInjected, SyncingEveryMicroBatchIsFoundAsExtraCollectivesAndNoSyncIsNot) {
  Config config = small_config();
  config.trainer.accumulate_grad_batches = 3;
  config.trainer.sync_every_micro_batch = true;
  const RunRecord every = train(config, 2, "sync_every");
  ASSERT_TRUE(every.ok);
  const std::vector<Finding> findings = catalogue_of({&every});
  const Finding* f = titled(findings, "gradient allreduces per optimizer step where the bucket plan needs 1");
  ASSERT_NE(f, nullptr) << (findings.empty() ? "no finding" : findings[0].title);
  const double per_step =
      static_cast<double>(every.summary.allreduce.calls) / static_cast<double>(every.summary.optimizer_steps_run);
  EXPECT_GT(per_step, 2.5);
  EXPECT_LE(per_step, 3.0);
  EXPECT_GT(f->cost_seconds, 0);
  EXPECT_LT(f->cost_seconds, every.summary.allreduce.seconds);

  config.trainer.sync_every_micro_batch = false;
  const RunRecord no_sync = train(config, 2, "no_sync");
  ASSERT_TRUE(no_sync.ok);
  EXPECT_EQ(titled(catalogue_of({&no_sync}), "gradient allreduces per optimizer step"), nullptr);
}

}  // namespace
}  // namespace ddp
