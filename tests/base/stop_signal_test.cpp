// What a signal does to a process whose StopSignals are held until exit (as the CLI holds
// them): the first is only recorded, a second ends it at once and says so; once the process
// has stopped and said why (StopSignals::end_quietly_with), any signal ends it with that
// code and says nothing (a rank that mpirun sends SIGTERM as another rank exits).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <ostream>
#include <string>
#include <thread>

#include "base/stop_signal.h"

namespace ddp {
namespace {

// Sends `signal` to this process and gives the watcher time to take it.
void send(int signal) {
  ::kill(::getpid(), signal);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
}

// Nothing of ddpscope's on stderr (under ASan, _exit on the watcher thread makes ASan warn
// about its stack: that is ASan's, not ours). Plain gtest has no negated regex, hence a matcher.
class SaysNothingOfItsOwnMatcher : public ::testing::MatcherInterface<const std::string&> {
 public:
  bool MatchAndExplain(const std::string& err, ::testing::MatchResultListener*) const override {
    return err.find("ddpscope") == std::string::npos;
  }
  void DescribeTo(std::ostream* os) const override { *os << "has no line of ddpscope's"; }
};

::testing::Matcher<const std::string&> SaysNothingOfItsOwn() {
  return ::testing::MakeMatcher(new SaysNothingOfItsOwnMatcher);
}

class StopSignalDeathTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(StopSignalDeathTest, TheFirstSignalIsRecordedAndASecondEndsTheProcessSayingSo) {
  EXPECT_EXIT(
      {
        take_stop_signals();
        StopSignals::hold_until_exit();
        send(SIGINT);
        if (StopSignals::pending() != SIGINT) _exit(1);
        send(SIGTERM);
        _exit(2);  // not reached: the second signal ended the process
      },
      ::testing::ExitedWithCode(128 + SIGTERM), "stopped at once by a second SIGTERM");
}

// The launcher's way (dist/launcher.cpp): every signal is counted and none ends the process,
// also after the job it supervised has ended.
TEST_F(StopSignalDeathTest, HeldInRecordModeSignalsAreOnlyCountedUntilTheProcessExits) {
  EXPECT_EXIT(
      {
        take_stop_signals();
        StopSignals::hold_until_exit(SecondSignal::kRecord);
        send(SIGINT);
        send(SIGTERM);
        send(SIGTERM);
        _exit(StopSignals::count() == 3 && StopSignals::last() == SIGTERM ? 7 : 1);
      },
      ::testing::ExitedWithCode(7), SaysNothingOfItsOwn());
}

TEST_F(StopSignalDeathTest, AfterTheStopIsSaidASignalEndsTheProcessWithItsCodeSilently) {
  EXPECT_EXIT(
      {
        take_stop_signals();
        StopSignals::hold_until_exit();
        send(SIGINT);
        StopSignals::end_quietly_with(128 + SIGINT);
        send(SIGTERM);
        _exit(2);
      },
      ::testing::ExitedWithCode(128 + SIGINT), SaysNothingOfItsOwn());
}

// A rank stopped on the ranks' agreement, its own copy of the signal not yet taken: mpirun's
// SIGTERM (another signal) ends it at once.
TEST_F(StopSignalDeathTest, AfterTheStopIsSaidEvenAFirstSignalEndsTheProcess) {
  EXPECT_EXIT(
      {
        take_stop_signals();
        StopSignals::hold_until_exit();
        StopSignals::end_quietly_with(128 + SIGINT);
        send(SIGTERM);
        _exit(2);
      },
      ::testing::ExitedWithCode(128 + SIGINT), SaysNothingOfItsOwn());
}

// The same rank's own copy of the stop's signal, taken late, ends nothing: the rank leaves with
// the others (else mpirun kills rank zero before it says why). A further one ends it.
TEST_F(StopSignalDeathTest, AfterTheStopIsSaidTheStopsOwnSignalTakenLateIsOnlyItsCopy) {
  EXPECT_EXIT(
      {
        take_stop_signals();
        StopSignals::hold_until_exit();
        StopSignals::end_quietly_with(128 + SIGTERM);
        send(SIGTERM);
        if (StopSignals::count() != 1) _exit(3);
        send(SIGTERM);
        _exit(2);
      },
      ::testing::ExitedWithCode(128 + SIGTERM), SaysNothingOfItsOwn());
  EXPECT_EXIT(
      {
        take_stop_signals();
        StopSignals::hold_until_exit();
        StopSignals::end_quietly_with(128 + SIGTERM);
        send(SIGTERM);
        _exit(2);
      },
      ::testing::ExitedWithCode(2), SaysNothingOfItsOwn());
}

// A second signal while a file is being written (a checkpoint of tens of MB): the half-written
// temporary file is removed on the way out, and the last whole checkpoint is named.
TEST_F(StopSignalDeathTest, ASecondSignalRemovesTheFileBeingWrittenAndNamesTheLastCheckpoint) {
  const std::string temp = ::testing::TempDir() + "ddp_stop_in_progress.safetensors.tmp";
  EXPECT_EXIT(
      {
        take_stop_signals();
        StopSignals::hold_until_exit();
        set_last_checkpoint("/runs/version_0/checkpoints/last.safetensors");
        if (std::FILE* f = std::fopen(temp.c_str(), "w")) std::fclose(f);
        set_file_in_progress(temp.c_str());
        send(SIGHUP);
        send(SIGHUP);
        _exit(2);
      },
      ::testing::ExitedWithCode(128 + SIGHUP),
      "stopped at once by a second SIGHUP.*\n.*resume with the same options and --ckpt-path "
      "/runs/version_0/checkpoints/last.safetensors");
  EXPECT_FALSE(std::filesystem::exists(temp));
}

// Without a StopSignals (analyze, predict: nothing to checkpoint), a signal ends the process as
// by default, and the temporary file being written goes with it (Ctrl-C during analyze --trace
// left a partial .tmp behind).
TEST_F(StopSignalDeathTest, WithoutStopSignalsASignalEndsTheProcessAndRemovesTheFileBeingWritten) {
  const std::string temp = ::testing::TempDir() + "ddp_signal_in_progress.json.tmp";
  EXPECT_EXIT(
      {
        take_stop_signals();
        if (std::FILE* f = std::fopen(temp.c_str(), "w")) std::fclose(f);
        set_file_in_progress(temp.c_str());
        send(SIGINT);
        _exit(2);
      },
      ::testing::KilledBySignal(SIGINT), "");
  EXPECT_FALSE(std::filesystem::exists(temp));
}

}  // namespace
}  // namespace ddp
