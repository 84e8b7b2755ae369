// The event store gives the events in start order, whether they stayed in memory or were
// written to disk in sorted runs and merged; the steps found do not depend on which.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>

#include "analyze/event_store.h"
#include "analyze/rank_steps.h"
#include "analyze/trace_reader.h"
#include "ddpscope/error.h"

namespace ddp {
namespace {

std::vector<TraceEvent> shuffled_events(std::size_t count) {
  std::mt19937_64 random(7);
  std::vector<TraceEvent> events(count);
  for (std::size_t i = 0; i < count; ++i) {
    events[i].start_ns = static_cast<int64_t>(random() % 50);  // many ties
    events[i].correlation = static_cast<int64_t>(i);           // the order they were added
  }
  return events;
}

std::vector<TraceEvent> stored(const std::vector<TraceEvent>& events, std::size_t run_events) {
  EventStore store(run_events);
  for (const TraceEvent& e : events) store.push_back(e);
  EXPECT_EQ(store.size(), events.size());
  return store.sorted();
}

TEST(EventStore, GivesTheEventsInStartOrderTiesAsAddedInMemoryOrMergedFromDisk) {
  const std::vector<TraceEvent> events = shuffled_events(10007);
  std::vector<TraceEvent> expected = events;
  std::stable_sort(expected.begin(), expected.end(),
                   [](const TraceEvent& a, const TraceEvent& b) { return a.start_ns < b.start_ns; });
  for (std::size_t run :
       {std::size_t{1}, std::size_t{3}, std::size_t{4096}, std::size_t{5000}, EventStore::kRunEvents}) {
    const std::vector<TraceEvent> got = stored(events, run);
    ASSERT_EQ(got.size(), expected.size()) << run;
    for (std::size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].start_ns, expected[i].start_ns) << "run " << run << " at " << i;
      ASSERT_EQ(got[i].correlation, expected[i].correlation) << "run " << run << " at " << i;
    }
  }
  EXPECT_TRUE(stored({}, 3).empty());
}

TEST(EventStore, AFolderThatCannotHoldTheRunsIsAnErrorNamingIt) {
  const char* before = std::getenv("TMPDIR");
  const std::string saved = before ? before : "";
  ::setenv("TMPDIR", "/nonexistent-ddpscope-folder", 1);
  EventStore store(2);
  try {
    for (const TraceEvent& e : shuffled_events(5)) store.push_back(e);
    ADD_FAILURE() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("in /nonexistent-ddpscope-folder (No such file or directory): set TMPDIR"),
              std::string::npos)
        << e.what();
  }
  if (before)
    ::setenv("TMPDIR", saved.c_str(), 1);
  else
    ::unsetenv("TMPDIR");
}

// A real trace's steps, its events kept in memory or spilled in runs of 1000 (41 runs).
TEST(EventStore, ARealTracesStepsAreTheSameWhenItsEventsAreSpilled) {
  TraceFile read =
      read_trace(std::string(DDPSCOPE_SOURCE_DIR) + "/tests/analyze/fixtures/nccl_parser_config_nccl_data.json.gz");
  TraceFile spilled;
  spilled.path = read.path;
  spilled.names = read.names;
  spilled.threads = read.threads;
  spilled.thread_pid = read.thread_pid;
  spilled.events = EventStore(1000);
  for (const TraceEvent& e : read.events.sorted()) spilled.add(e);
  const RankSteps a = find_steps(read), b = find_steps(spilled);
  ASSERT_EQ(a.steps.size(), b.steps.size());
  for (std::size_t i = 0; i < a.steps.size(); ++i) {
    EXPECT_EQ(a.steps[i].start_ns, b.steps[i].start_ns);
    EXPECT_EQ(a.steps[i].part_ns, b.steps[i].part_ns);
  }
  ASSERT_EQ(a.collectives.size(), b.collectives.size());
  for (std::size_t i = 0; i < a.collectives.size(); ++i)
    EXPECT_EQ(a.collectives[i].start_ns, b.collectives[i].start_ns);
}

}  // namespace
}  // namespace ddp
