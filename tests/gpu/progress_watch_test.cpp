// The GPU wait's timeout counts the time without progress, not the whole wait (host only).
#include "gpu/progress_watch.h"

#include <gtest/gtest.h>

namespace ddp {
namespace {

using std::chrono::seconds;

TEST(ProgressWatch, ALongWaitThatKeepsMovingNeverStalls) {
  const auto t0 = ProgressWatch::Clock::time_point{};
  ProgressWatch watch(10.0, t0, 0);
  // Eleven minutes of waiting, a step finishing every 9 s: never 10 s without progress.
  for (int i = 1; i <= 73; ++i) EXPECT_FALSE(watch.stalled(t0 + seconds(9 * i), i));
}

TEST(ProgressWatch, StallsOnceTheCounterStandsStillForTheTimeout) {
  const auto t0 = ProgressWatch::Clock::time_point{};
  ProgressWatch watch(10.0, t0, 5);
  EXPECT_FALSE(watch.stalled(t0 + seconds(8), 6));
  EXPECT_FALSE(watch.stalled(t0 + seconds(17), 6));  // 9 s since it moved
  EXPECT_TRUE(watch.stalled(t0 + seconds(19), 6));   // 11 s
  EXPECT_DOUBLE_EQ(watch.still_for(t0 + seconds(19)), 11.0);
}

}  // namespace
}  // namespace ddp
