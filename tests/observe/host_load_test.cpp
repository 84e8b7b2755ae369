// The host's busy core time from /proc/stat, and a real run on a machine another process keeps
// busy: the summary says what the others took.
#include "observe/host_load.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "support/run_command.h"
#include "train/records/run_summary.h"

namespace ddp {
namespace {

TEST(HostLoad, SumsTheBusyTimeOfEveryCoreLine) {
  // user nice system idle iowait irq softirq steal: busy = all but idle and iowait.
  const std::optional<HostLoadSnapshot> s = parse_host_busy(
      "cpu  300 0 100 900 10 0 0 0 0 0\n"
      "cpu0 200 0 50 400 5 3 7 0 0 0\n"
      "cpu1 100 0 50 500 5 0 10 0 0 0\n"
      "intr 12345\n",
      100.0);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->cores, 2);
  EXPECT_DOUBLE_EQ(s->busy_core_seconds, 4.2);       // (260 + 160) ticks at 100 per second
  EXPECT_DOUBLE_EQ(s->interrupt_core_seconds, 0.2);  // irq 3 + softirq 17
  // Interrupt work is the kernel's, not another process's.
  const HostLoad h{
      .host = "node", .cores = 2, .busy_core_seconds = 4.2, .ranks_cpu_seconds = 3.5, .interrupt_core_seconds = 0.2};
  EXPECT_DOUBLE_EQ(h.others_core_seconds(), 0.5);
  EXPECT_FALSE(parse_host_busy("intr 1\n", 100.0).has_value());
  EXPECT_FALSE(parse_host_busy("cpu0 1 2\n", 100.0).has_value());  // too few fields
}

TEST(HostLoad, ARunSaysWhatAnotherProcessTookFromItsHost) {
  const auto dir = ddp::testing::fresh_dir("host_load_busy");
  const pid_t spinner = ::fork();
  if (spinner == 0) {
    for (volatile uint64_t spins = 0;; spins = spins + 1) {
    }
  }
  const auto r = ddp::testing::run_command(
      std::string(DDPSCOPE_BINARY) + " train --preset seed --devices 2 --max-epochs 20 --progress-bar off", dir);
  ::kill(spinner, SIGKILL);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json summary =
      nlohmann::json::parse(ddp::testing::read_text(dir / "ddpscope_logs/version_0/summary.json"));
  ASSERT_EQ(summary["host_load"].size(), 1u) << summary.dump();
  const nlohmann::json& host = summary["host_load"][0];
  EXPECT_EQ(host["cores"].get<int>(), static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)));
  // A spinner wants a whole core; beside two ranks it gets a good share of one.
  EXPECT_GT(host["others_core_seconds"].get<double>(), 0.1 * summary["wall_seconds"].get<double>()) << host.dump();
}

}  // namespace
}  // namespace ddp
