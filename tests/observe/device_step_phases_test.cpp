#include "observe/device_step_phases.h"

#include <gtest/gtest.h>

#include "ddpscope/error.h"

namespace ddp {
namespace {

// A timed step of two micro-batches: start 1.0, zeroed 1.1, (data, forward, backward) ends
// at 1.2 1.5 1.9 and 2.0 2.3 2.7, end 3.0 seconds after the reference.
DeviceStepMarks two_micro_batches() { return {5'000'000'000, {1.0, 1.1, 1.2, 1.5, 1.9, 2.0, 2.3, 2.7, 3.0}}; }

TEST(DeviceStepPhases, EachIntervalGoesToItsPhase) {
  const DeviceStepTimes t = device_step_times(two_micro_batches());
  EXPECT_EQ(t.micro_batches, 2);
  EXPECT_NEAR(t.data, 0.1 + 0.1, 1e-12);
  EXPECT_NEAR(t.forward, 0.3 + 0.3, 1e-12);
  EXPECT_NEAR(t.backward, 0.4 + 0.4, 1e-12);
  EXPECT_NEAR(t.optimizer, 0.1 + 0.3, 1e-12);  // zeroing the gradients, and the update
}

TEST(DeviceStepPhases, SpansFollowTheMarksOnTheHostsClock) {
  const std::vector<Span> spans = device_step_spans(two_micro_batches());
  ASSERT_EQ(spans.size(), 8u);
  EXPECT_EQ(spans[0].start_ns, 6'000'000'000);
  EXPECT_EQ(spans[0].name, static_cast<uint16_t>(Phase::kOptimizer));
  EXPECT_EQ(spans[1].name, static_cast<uint16_t>(Phase::kData));
  EXPECT_EQ(spans[6].name, static_cast<uint16_t>(Phase::kBackward));
  EXPECT_EQ(spans[7].end_ns, 8'000'000'000);
  for (std::size_t i = 0; i < spans.size(); ++i) {
    EXPECT_EQ(spans[i].thread, TraceThread::kGpu);
    if (i > 0) EXPECT_EQ(spans[i].start_ns, spans[i - 1].end_ns);
  }
}

TEST(DeviceStepPhases, MarksOfNoWholeStepOrOutOfOrderAreRefused) {
  EXPECT_THROW(device_step_times({0, {0.0, 0.1, 0.2, 0.3}}), DataError);  // not 3 + 3k
  EXPECT_THROW(device_step_times({0, {}}), DataError);
  EXPECT_THROW(device_step_spans({0, {0.0, 0.1, 0.2, 0.3, 0.25, 0.4}}), DataError);
}

// A clock that has spent `other` seconds in the phase other (and nothing elsewhere).
PhaseClock clock_with_other(double other) {
  PhaseClock clock;
  const auto t0 = PhaseClock::Clock::now();
  clock.start(Phase::kOther,
              t0 - std::chrono::duration_cast<PhaseClock::Clock::duration>(std::chrono::duration<double>(other)));
  clock.enter(Phase::kLogging);
  return clock;
}

double at(const PhaseClock& clock, Phase p) { return clock.seconds()[static_cast<std::size_t>(p)]; }

TEST(DevicePhaseSamples, TheTimedMeansScaleToEveryStepAndLeaveTheRestInOther) {
  DevicePhaseSamples samples;
  samples.add_timed({.micro_batches = 1, .data = 1e-3, .forward = 2e-3, .backward = 3e-3, .optimizer = 4e-3});
  samples.add_timed({.micro_batches = 1, .data = 3e-3, .forward = 2e-3, .backward = 3e-3, .optimizer = 2e-3});
  for (int i = 0; i < 500; ++i) samples.add_trained(2);  // 1000 micro-batches in 500 steps
  PhaseClock clock = clock_with_other(10.0);
  const double other = at(clock, Phase::kOther);
  samples.attribute(clock);
  EXPECT_NEAR(at(clock, Phase::kData), 2.0, 1e-9);  // 2 ms per micro-batch
  EXPECT_NEAR(at(clock, Phase::kForward), 2.0, 1e-9);
  EXPECT_NEAR(at(clock, Phase::kBackward), 3.0, 1e-9);
  EXPECT_NEAR(at(clock, Phase::kOptimizer), 1.5, 1e-9);  // 3 ms per step
  EXPECT_NEAR(at(clock, Phase::kOther), other - 8.5, 1e-9);
}

TEST(DevicePhaseSamples, NoMoreThanOtherHoldsIsMovedSharedInProportion) {
  DevicePhaseSamples samples;
  samples.add_timed({.micro_batches = 1, .data = 1.0, .forward = 1.0, .backward = 2.0, .optimizer = 0.0});
  samples.add_trained(1);
  PhaseClock clock = clock_with_other(2.0);
  const double other = at(clock, Phase::kOther);
  samples.attribute(clock);
  EXPECT_NEAR(at(clock, Phase::kOther), 0.0, 1e-12);
  EXPECT_NEAR(at(clock, Phase::kBackward), other / 2, 1e-12);
  EXPECT_NEAR(at(clock, Phase::kData), other / 4, 1e-12);
}

TEST(DevicePhaseSamples, WithoutATimedStepNothingMoves) {
  PhaseClock clock = clock_with_other(1.0);
  const auto before = clock.seconds();
  DevicePhaseSamples untimed;
  untimed.add_trained(4);
  untimed.attribute(clock);
  EXPECT_EQ(clock.seconds(), before);
}

}  // namespace
}  // namespace ddp
