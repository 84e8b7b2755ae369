// Each rule of findings_catalogue.cpp over synthetic runs: it fires on runs that have its
// cause, with the cost it states, and stays silent on runs that do not; and the catalogue's
// ablations are planned where they make sense.
#include "doctor/findings_catalogue.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "doctor/ablation.h"
#include "doctor/workload_counts.h"
#include "train/config/run_config.h"

namespace ddp {
namespace {

// `devices` ranks on one host with `cores` cores between them, each spending `forward`
// seconds, for the full 200 epochs of the default configuration (5000 samples, batch 256).
RunRecord synthetic_run(int devices, double wall, int cores) {
  RunRecord run;
  run.label = "devices=" + std::to_string(devices);
  run.devices = devices;
  run.ok = true;
  run.summary.config = Config{};  // the defaults: the seed's
  run.wall_seconds = wall;
  run.epochs_run = run.epochs_full = 200;
  run.summary.world_size = devices;
  run.summary.wall_seconds = wall;
  run.summary.epochs = 200;
  run.summary.hosts.assign(devices, "node1");
  std::vector<int> all;
  for (int c = 0; c < cores; ++c) all.push_back(c);
  run.summary.cores_per_rank.assign(devices, all);
  PhaseSeconds phases{};
  phases[static_cast<std::size_t>(Phase::kForward)] = wall / 2;
  run.summary.phases_per_rank.assign(devices, phases);
  return run;
}

void set_wait(RunRecord& run, double share, double seconds) {
  SchedDelta d;
  d.wait_share = share;
  d.wait_seconds = seconds;
  d.run_seconds = seconds * (1 - share) / share;
  run.summary.sched_per_rank.assign(run.devices, d);
}

std::vector<Finding> catalogue_of(const std::vector<const RunRecord*>& runs,
                                  const std::vector<AblationResult>& ablations = {}) {
  FindingInputs in;
  in.device_runs = runs;
  in.ablations = ablations;
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

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

AblationResult ablation(const RunRecord& baseline, const std::string& name, double wall) {
  AblationResult a;
  a.name = name;
  a.run = synthetic_run(baseline.devices, wall, 2);
  a.run.label = baseline.label + " " + name;
  a.run.config = baseline.config;
  a.baseline = &baseline;
  return a;
}

// --- oversubscribed threads

TEST(CatalogueRules, ThreadsBeyondTheHostsCoresAreFoundWithTheMeasuredWaitAndTheAblation) {
  RunRecord run = synthetic_run(2, 10.0, 2);
  run.config.trainer.threads_per_device = 2;
  run.summary.threads_per_rank.assign(2, ThreadCensus{6, 2, 2});
  set_wait(run, 0.3, 0.6);
  const std::vector<Finding> findings = catalogue_of({&run}, {ablation(run, "threads-per-device=1", 8.0)});
  const Finding* f = titled(findings, "threads x");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "2 threads x 2 ranks on 2 cores: each thread waited 30 % of its time for a core");
  EXPECT_NEAR(f->cost_seconds, 0.6, 1e-12);
  EXPECT_NEAR(f->share_of_wall, 0.06, 1e-12);
  EXPECT_TRUE(contains(f->detail, "ask for 4 threads (--threads-per-device 2) and may use 2 cores: a fair share is 1"))
      << f->detail;
  EXPECT_TRUE(contains(f->detail, "A rank ran up to 6 threads")) << f->detail;
  EXPECT_TRUE(contains(f->detail, "With threads-per-device=1: -20.0 %, noise unknown:")) << f->detail;
  EXPECT_TRUE(contains(f->fix, "--threads-per-device 1")) << f->fix;
}

TEST(CatalogueRules, OpenMpThreadsBeyondTheShareAreOversubscriptionToo) {
  RunRecord run = synthetic_run(2, 10.0, 2);
  run.summary.threads_per_rank.assign(2, ThreadCensus{8, 4, 1});  // OMP_NUM_THREADS=4 from the environment
  set_wait(run, 0.2, 0.5);
  const std::vector<Finding> f_all = catalogue_of({&run});
  const Finding* f = titled(f_all, "4 threads x 2 ranks on 2 cores");
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(contains(f->detail, "(--threads-per-device 1, OpenMP or BLAS set to 4)")) << f->detail;
}

TEST(CatalogueRules, OversubscriptionWithoutAMeasuredWaitSaysSo) {
  RunRecord run = synthetic_run(2, 10.0, 2);
  run.config.trainer.threads_per_device = 2;
  const std::vector<Finding> f_all = catalogue_of({&run});
  const Finding* f = titled(f_all, "threads x");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "2 threads x 2 ranks on 2 cores (the wait for a core was not measured)");
  EXPECT_EQ(f->cost_seconds, 0);
}

TEST(CatalogueRules, ThreadsWithinTheCoresOrWithoutWaitingAreNotOversubscribed) {
  RunRecord fits = synthetic_run(2, 10.0, 4);
  fits.config.trainer.threads_per_device = 2;
  set_wait(fits, 0.3, 0.6);  // waiting for another reason: the straggler's finding, not this one
  EXPECT_EQ(titled(catalogue_of({&fits}), "threads x"), nullptr);

  RunRecord idle = synthetic_run(2, 10.0, 2);
  idle.config.trainer.threads_per_device = 2;
  set_wait(idle, 0.04, 0.1);  // below kOversubscribedMinWaitShare: the threads hardly ran at once
  EXPECT_EQ(titled(catalogue_of({&idle}), "threads x"), nullptr);

  RunRecord unknown = synthetic_run(2, 10.0, 0);  // no cores in the summary: nothing to compare
  unknown.config.trainer.threads_per_device = 2;
  EXPECT_EQ(titled(catalogue_of({&unknown}), "threads x"), nullptr);
}

// --- input starvation

void set_data(RunRecord& run, int rank, double seconds) {
  run.summary.phases_per_rank[rank][static_cast<std::size_t>(Phase::kData)] = seconds;
}

TEST(CatalogueRules, ARankWaitingForItsInputIsFoundWithItsCostPerMicroBatch) {
  RunRecord run = synthetic_run(2, 10.0, 2);
  set_data(run, 1, 2.0);  // 2000 micro-batches per rank: 1 ms each
  const std::vector<Finding> findings = catalogue_of({&run});
  const Finding* f = titled(findings, "Input starvation");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title,
            "Input starvation: rank 1 spends 1.00 ms per micro-batch loading its batch in the training thread: 20 % of "
            "the run");
  EXPECT_NEAR(f->cost_seconds, 2.0, 1e-12);
  EXPECT_TRUE(contains(f->fix, "no core for a loader worker")) << f->fix;

  RunRecord roomy = synthetic_run(2, 10.0, 8);
  roomy.config.data.loader_workers = 1;
  set_data(roomy, 0, 3.0);
  const std::vector<Finding> g_all = catalogue_of({&roomy});
  const Finding* g = titled(g_all, "Input starvation");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(contains(g->title, "waiting for its loader")) << g->title;
  EXPECT_TRUE(contains(g->fix, "--loader-workers 2")) << g->fix;
}

TEST(CatalogueRules, InputBelowItsShareOrCountedByTheHabitIsNotStarvation) {
  RunRecord run = synthetic_run(1, 10.0, 2);
  set_data(run, 0, 0.9);  // 9 %
  EXPECT_EQ(titled(catalogue_of({&run}), "Input starvation"), nullptr);

  // 3 s of loading, of which a loader thread takes 2.5 s off: the habit's finding counts
  // those, and the 0.5 s that remain are 5 %.
  RunRecord habit = synthetic_run(1, 10.0, 2);
  set_data(habit, 0, 3.0);
  AblationResult workers = ablation(habit, "loader-workers=1", 7.5);
  workers.habit = "Generating every batch in the training thread";
  workers.run.config.data.loader_workers = 1;
  set_data(workers.run, 0, 0.5);
  EXPECT_EQ(titled(catalogue_of({&habit}, {workers}), "Input starvation"), nullptr);
}

// --- extra collectives per step

RunRecord syncing(bool every_micro_batch, int64_t calls) {
  RunRecord run = synthetic_run(2, 10.0, 2);
  run.config.trainer.accumulate_grad_batches = 3;
  run.config.trainer.sync_every_micro_batch = every_micro_batch;
  run.summary.optimizer_steps_run = 100;
  run.summary.allreduce.calls = calls;
  run.summary.allreduce.seconds = 0.3;
  return run;
}

TEST(CatalogueRules, MoreAllreducesPerStepThanBucketsAreFoundWithTheirExtraTime) {
  const RunRecord run = syncing(true, 300);
  const std::vector<Finding> f_all = catalogue_of({&run});
  const Finding* f = titled(f_all, "gradient allreduces per optimizer step");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title,
            "3.0 gradient allreduces per optimizer step where the bucket plan needs 1: 0.200 s of extra communication "
            "at 2 devices");
  EXPECT_NEAR(f->cost_seconds, 0.2, 1e-12);
  EXPECT_TRUE(contains(f->detail, "--sync-every-micro-batch all-reduces on each of the 3 micro-batches")) << f->detail;
  EXPECT_TRUE(contains(f->fix, "drop `--sync-every-micro-batch`")) << f->fix;

  const RunRecord unexplained = syncing(false, 200);
  const std::vector<Finding> g_all = catalogue_of({&unexplained});
  const Finding* g = titled(g_all, "2.0 gradient allreduces");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(contains(g->detail, "does not explain the others")) << g->detail;
}

TEST(CatalogueRules, OneAllreducePerBucketOrTheNoSyncHabitsOwnFindingIsNotReportedAgain) {
  const RunRecord plain = syncing(false, 100);
  EXPECT_EQ(titled(catalogue_of({&plain}), "gradient allreduces"), nullptr);
  const RunRecord every = syncing(true, 300);
  EXPECT_EQ(titled(catalogue_of({&every}, {ablation(every, "no_sync", 9.0)}), "gradient allreduces"), nullptr);
}

// --- per-device batch semantics

TEST(CatalogueRules, RunsOfOtherDeviceCountsAreComparedBySamplesPerSecondNotSecondsPerIteration) {
  RunRecord one = synthetic_run(1, 10.0, 2);
  RunRecord two = synthetic_run(2, 6.0, 2);
  one.summary.train_samples = two.summary.train_samples = 1'000'000;
  const std::vector<Finding> findings = catalogue_of({&one, &two});
  const Finding* f = titled(findings, "Batch size is per device");
  ASSERT_NE(f, nullptr);
  // 1 device: 20 iterations an epoch, 2.5 ms each; 2 devices: 10, 3 ms each.
  EXPECT_EQ(f->title,
            "Batch size is per device: at 2 devices an iteration takes 2x the samples; compare samples/s (1.67x), "
            "not s/it (0.83x)");
  EXPECT_TRUE(contains(f->detail, "devices=1: 100000 samples/s, 2.500 ms/it (256 samples per it)")) << f->detail;
  EXPECT_TRUE(contains(f->detail, "devices=2: 166667 samples/s, 3.000 ms/it (512 samples per it)")) << f->detail;
  EXPECT_EQ(f->cost_seconds, 0);

  RunRecord other_one = synthetic_run(1, 9.0, 2);
  other_one.summary.train_samples = 1'000'000;
  EXPECT_EQ(titled(catalogue_of({&one, &other_one}), "Batch size is per device"), nullptr);
}

// --- bucket-size sweep

TEST(CatalogueRules, TheFastestBucketCapIsNamedWhenItBeatsTheConfigurationsOwn) {
  const RunRecord base = synthetic_run(2, 10.0, 2);
  AblationResult two_mb = ablation(base, "bucket_cap_mb=2", 9.0);
  two_mb.run.config.trainer.bucket_cap_mb = 2;
  AblationResult one_mb = ablation(base, "bucket_cap_mb=1", 9.5);
  one_mb.run.config.trainer.bucket_cap_mb = 1;
  const std::vector<Finding> f_all = catalogue_of({&base}, {two_mb, one_mb});
  const Finding* f = titled(f_all, "Gradient buckets");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "Gradient buckets of 2 MB were fastest at 2 devices: 10.0 % faster than 25 MB");
  EXPECT_NEAR(f->cost_seconds, 1.0, 1e-12);
  EXPECT_TRUE(contains(f->detail, "-10.0 %, noise unknown:")) << f->detail;

  AblationResult close = ablation(base, "bucket_cap_mb=2", 9.8);  // 2 %: inside kBucketSweepMinGain
  EXPECT_EQ(titled(catalogue_of({&base}, {close}), "Gradient buckets"), nullptr);
}

// --- the catalogue's ablations

Config wide(int64_t width, int64_t layers) {
  Config c;
  c.model.hidden_size = width;
  c.model.hidden_layers = layers;
  return c;
}

TEST(CatalogueAblations, TheBucketSweepNeedsAGradientOfSeveralBuckets) {
  EXPECT_TRUE(bucket_sweep_caps_mb(Config{}, 2).empty());  // the seed's 0.54 MB
  const Config config = wide(1024, 9);                     // 8 layers of 4 MiB between 9 hidden ones
  const std::vector<double> caps = bucket_sweep_caps_mb(config, 2);
  ASSERT_GE(caps.size(), 2u);
  std::vector<std::size_t> counts;
  for (const double cap : caps) {
    WorkloadConfig w = workload_for(config, 2);
    w.bucket_cap_mb = cap;
    counts.push_back(count_workload(w).bucket_bytes.size());
  }
  // About 8: each 4 MiB layer alone, the input layer with its neighbour, the output layer in
  // DDP's 1 MiB first bucket, is 9.
  EXPECT_EQ(counts, (std::vector<std::size_t>{2, 4, 9}));

  const std::vector<Ablation> planned = plan_catalogue_ablations(config, 2, 2);
  ASSERT_EQ(planned.size(), caps.size());
  EXPECT_EQ(planned.front().name, fmt::format("bucket_cap_mb={}", caps.front()));
  EXPECT_TRUE(planned.front().multi_device_only);
  EXPECT_TRUE(plan_catalogue_ablations(config, 1, 2).empty());  // one device has no buckets
}

TEST(CatalogueAblations, ThreadsAreCutToTheFairShareAndWorkersAddedWhereCoresAllow) {
  Config threads;
  threads.trainer.threads_per_device = 2;
  const std::vector<Ablation> cut = plan_catalogue_ablations(threads, 2, 2);
  ASSERT_EQ(cut.size(), 1u);
  EXPECT_EQ(cut[0].name, "threads-per-device=1");
  EXPECT_TRUE(cut[0].multi_device_only);  // 2 threads fit 2 cores at 1 device
  Config applied = threads;
  cut[0].apply(applied);
  EXPECT_EQ(applied.trainer.threads_per_device, 1);
  EXPECT_TRUE(plan_catalogue_ablations(Config{}, 2, 2).empty());

  Config workers;
  workers.data.loader_workers = 1;
  EXPECT_TRUE(plan_catalogue_ablations(workers, 2, 2).empty());  // 2 ranks x (1 + 1 + 1) > 2 cores
  const std::vector<Ablation> more = plan_catalogue_ablations(workers, 2, 8);
  ASSERT_EQ(more.size(), 1u);
  EXPECT_EQ(more[0].name, "loader-workers=2");
}

}  // namespace
}  // namespace ddp
