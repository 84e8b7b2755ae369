// The fault tests through the command line: `ddpscope train --devices 2` re-launches
// itself under mpirun; one rank is killed (SIGKILL) or stopped (SIGSTOP) mid-training. The
// job must exit with code 4 within 30 s, name rank 1, and leave no process behind.
#include "support/cli_fault.h"

namespace ddp {
namespace {

using testing::CliFault;
using testing::expect_no_survivors;
using testing::run_with_fault;

TEST(CliFault, KilledRankEndsTheJobWithCode4NamingIt) {
  const CliFault run = run_with_fault(SIGKILL, "kill", DDPSCOPE_BINARY);
  EXPECT_EQ(run.exit_code, 4) << run.err;
  EXPECT_LT(run.seconds_after_fault, 30.0);
  EXPECT_NE(run.err.find("ddpscope: error: rank 1 (on "), std::string::npos) << run.err;
  EXPECT_NE(run.err.find(") was killed by signal 9 (Killed)"), std::string::npos) << run.err;
  expect_no_survivors(run.marker);
}

TEST(CliFault, StoppedRankEndsTheJobWithCode4NamingIt) {
  const CliFault run = run_with_fault(SIGSTOP, "stop", DDPSCOPE_BINARY);
  EXPECT_EQ(run.exit_code, 4) << run.err;
  EXPECT_LT(run.seconds_after_fault, 30.0);
  EXPECT_NE(run.err.find("made no progress for 3 s; rank(s) 1 (on " + testing::this_host() +
                         ") stopped responding (hung, killed or cut off)"),
            std::string::npos)
      << run.err;
  expect_no_survivors(run.marker);
}

}  // namespace
}  // namespace ddp
