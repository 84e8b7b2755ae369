// A CPU hog pinned to one rank's core, for real: a 2-rank `ddpscope train` bound to two
// cores, then the same run with a spinning process on rank 1's core. The finding from the
// run's record names rank 1 and its shared core, with what the others wait per step within
// a stated tolerance of the injected delay; the clean run is not said to share its core.
//
// The injected delay: what the hog adds to rank 1's compute per step, measured as rank 1's
// compute per step less rank 0's in the hogged run; rank 0 waits about that for rank 1. It
// is not simply rank 1's clean compute (the hog taking half its core): how the scheduler
// splits the core between the hog and the rank's threads (compute and loader) varies
// (rank 0's wait measured 0.4 to 1.3 times rank 1's clean compute between builds). Tolerance: a factor
// kTolerance either way, loose enough for a shared 2-core machine.
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "dist/launcher.h"
#include "doctor/findings_straggler.h"
#include "support/run_command.h"
#include "support/sanitizer_build.h"

namespace ddp {
namespace {

constexpr double kTolerance = 2.0;

// A process spinning on one core until destroyed.
class CpuHog {
 public:
  explicit CpuHog(int core) : pid_(fork()) {
    if (pid_ != 0) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(core, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0) _exit(1);
    for (;;) asm volatile("" ::: "memory");  // spin, never optimised away
  }
  ~CpuHog() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  CpuHog(const CpuHog&) = delete;
  CpuHog& operator=(const CpuHog&) = delete;
  bool running() const { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }

 private:
  pid_t pid_;
};

RunRecord two_rank_run(const std::string& name) {
  const auto dir = testing::fresh_dir(name);
  const auto r = testing::run_command(std::string(DDPSCOPE_BINARY) +
                                          " train --devices 2 --dataset-size 4096 --batch-size 64 --hidden-size 256 "
                                          "--max-epochs 3 --progress-bar off --version 0",
                                      dir);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  RunRecord run;
  run.label = "devices=2 " + name;
  run.devices = 2;
  run.ok = r.exit_code == 0;
  if (!run.ok) return run;
  run.summary = nlohmann::ordered_json::parse(testing::read_text(dir / "ddpscope_logs" / "version_0" / "summary.json"))
                    .get<RunSummary>();
  run.wall_seconds = run.summary.wall_seconds;
  return run;
}

const Finding* arrival_finding(const std::vector<Finding>& findings) {
  for (const Finding& f : findings) {
    if (f.title.find("holds the others back") != std::string::npos) return &f;
  }
  return nullptr;
}

// Rank r's forward, backward and optimizer per synchronising step.
double compute_per_step(const RunRecord& run, int r) {
  const PhaseSeconds& p = run.summary.phases_per_rank[r];
  const double compute = p[static_cast<std::size_t>(Phase::kForward)] + p[static_cast<std::size_t>(Phase::kBackward)] +
                         p[static_cast<std::size_t>(Phase::kOptimizer)];
  return compute / static_cast<double>(run.summary.arrivals.steps);
}

TEST(Straggler, AHogOnOneRanksCoreIsFoundAsAProcessSharingItWithTheWaitItInjects) {
  ASSERT_GE(available_cores(), 2) << "the test binds two ranks to two cores";
  const RunRecord clean = two_rank_run("straggler_clean");
  ASSERT_TRUE(clean.ok);
  ASSERT_EQ(clean.summary.cores_per_rank.size(), 2u);
  ASSERT_EQ(clean.summary.cores_per_rank[1].size(), 1u) << "the launcher binds each rank to a core";
  const int core = clean.summary.cores_per_rank[1][0];
  ASSERT_NE(clean.summary.cores_per_rank[0], clean.summary.cores_per_rank[1]);
  ASSERT_GT(clean.summary.arrivals.steps, 0);
  ASSERT_EQ(clean.summary.sched_per_rank.size(), 2u);
  // A hog can only slow one rank where its core is otherwise the rank's own: on a machine
  // saturated by other unpinned processes, the kernel moves them off the hogged core and
  // both ranks keep equal shares. The clean run says which machine this is.
  const double busy = std::max(clean.summary.sched_per_rank[0].wait_share, clean.summary.sched_per_rank[1].wait_share);
  if (busy > kCoreWaitMinShare) {
    GTEST_SKIP() << "this machine is saturated by other processes: the clean ranks already waited " << 100 * busy
                 << " % of their time for their cores, so a hog on one core cannot be injected";
  }
  // The cause under test is not found where it is absent. (A clean run may still name a rank
  // whose core is slower for reasons of the host's; tests/doctor/clean_run_findings_test.cpp
  // holds the clean runs to no finding over repeats.)
  const Finding* clean_finding = arrival_finding(find_problems(FindingInputs{.device_runs = {&clean}}));
  if (clean_finding != nullptr) {
    EXPECT_EQ(clean_finding->detail.find("another process shares it"), std::string::npos) << clean_finding->detail;
  }

  RunRecord hogged;
  {
    CpuHog hog(core);
    ASSERT_TRUE(hog.running());
    hogged = two_rank_run("straggler_hogged");
    ASSERT_TRUE(hog.running()) << "the hog ended before the run did";
  }
  ASSERT_TRUE(hogged.ok);
  ASSERT_EQ(hogged.summary.cores_per_rank[1], std::vector<int>{core});
  // Under ASan one CI-like run saw the hog share the core (wait share 0.50) without rank 1
  // arriving last often enough to be named: the finding is the release build's to check.
  if (testing::kSanitizerBuild) GTEST_SKIP() << "both runs ran; the finding is checked in the release build";
  const std::vector<Finding> findings = find_problems(FindingInputs{.device_runs = {&hogged}});
  const Finding* f = arrival_finding(findings);
  ASSERT_NE(f, nullptr) << "rank 1's wait share " << hogged.summary.sched_per_rank.at(1).wait_share;
  EXPECT_EQ(f->title.rfind("Rank 1 holds the others back", 0), 0u) << f->title;
  EXPECT_NE(f->detail.find("another process shares it"), std::string::npos) << f->detail;
  const double waited = hogged.summary.arrivals.straggler->cost_seconds_per_step;  // rank 0's, 2 ranks
  const double injected = compute_per_step(hogged, 1) - compute_per_step(hogged, 0);
  ASSERT_GT(injected, 0.0) << "the hog did not slow rank 1's compute";
  EXPECT_GT(waited, injected / kTolerance) << "compute per step added to rank 1 " << injected << " s";
  EXPECT_LT(waited, injected * kTolerance) << "compute per step added to rank 1 " << injected << " s";
}

}  // namespace
}  // namespace ddp
