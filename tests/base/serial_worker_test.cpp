#include "base/serial_worker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

namespace ddp {
namespace {

TEST(SerialWorker, RunsTheTasksInTheOrderGivenOneAtATime) {
  std::vector<int> ran;  // touched by the worker's thread only, read after finish()
  std::atomic<int> running{0};
  std::atomic<int> most_at_once{0};
  SerialWorker worker(2);
  for (int i = 0; i < 200; ++i) {
    worker.give([&, i] {
      most_at_once = std::max(most_at_once.load(), ++running);
      ran.push_back(i);
      --running;
    });
  }
  worker.finish();
  ASSERT_EQ(ran.size(), 200U);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(ran[i], i);
  EXPECT_EQ(most_at_once, 1);
}

TEST(SerialWorker, GiveWaitsWhileAsManyTasksAsItsCapacityWait) {
  std::atomic<bool> release{false};
  std::atomic<int> given{0};
  SerialWorker worker(1);
  std::thread giver([&] {
    for (int i = 0; i < 3; ++i) {
      worker.give([&] {
        while (!release) std::this_thread::yield();
      });
      ++given;
    }
  });
  // One runs (held), one waits: the third give() cannot return until the first is released.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (given < 2 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  EXPECT_EQ(given, 2);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(given, 2);
  release = true;
  giver.join();
  worker.finish();
  EXPECT_EQ(given, 3);
}

TEST(SerialWorker, FinishRethrowsTheFirstFailureAndTheTasksAfterItDoNotRun) {
  std::atomic<int> ran{0};
  SerialWorker worker(8);
  worker.give([&] { ++ran; });
  worker.give([] { throw std::runtime_error("step 2 failed"); });
  for (int i = 0; i < 5; ++i) worker.give([&] { ++ran; });
  try {
    worker.finish();
    FAIL() << "finish() did not rethrow";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "step 2 failed");
  }
  EXPECT_EQ(ran, 1);  // the five given after the failing one were dropped, run or not yet given
  const int after = ran;
  worker.give([&] { ++ran; });  // dropped: the worker has failed
  EXPECT_THROW(worker.finish(), std::runtime_error);
  EXPECT_EQ(ran, after);
}

TEST(SerialWorker, DestroyedUnfinishedItDropsWhatWaitsAndJoins) {
  std::atomic<int> ran{0};
  {
    SerialWorker worker(4);
    worker.give([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      ++ran;
    });
    for (int i = 0; i < 3; ++i) worker.give([&] { ++ran; });
    // Gone unfinished, as when the stage that gives throws.
  }
  EXPECT_LE(ran, 1);  // at most the one running; the three waiting are dropped
  const int after = ran;
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(ran, after);  // nothing runs once it is gone
}

}  // namespace
}  // namespace ddp
