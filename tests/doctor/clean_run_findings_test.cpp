// A configuration without a problem gets none of the cause findings, over several runs, so
// that noise alone never writes one: the same small 1- and 2-device runs as the
// injection tests, each time read back as the doctor reads them, through every rule.
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "doctor/findings.h"
#include "support/run_command.h"
#include "train/config/run_config.h"

namespace ddp {
namespace {

// Words of the titles of the findings that name a cause in the configuration
// (findings_catalogue.cpp).
const std::vector<std::string> kCauseWords = {"threads x", "Input starvation", "allreduces per optimizer step where",
                                              "Gradient buckets of"};

// A straggler in a clean run is mostly a rank whose core computed slower for the same work:
// on this shared VM one rank's compute was measured 40 % slower in one repeat of three, with
// no wait for its core and no steal (the host's, not the configuration's). The causes the
// rules pin on this machine's processes can be real for a moment on a shared machine (a CI
// job's own process waking on a rank's core): one repeat may show one, a rule that made it
// up from noise would show it again.
const std::vector<std::string> kStragglerCauseWords = {"another process shares it", "gave its core to another guest",
                                                       "waited for its loader"};

TEST(CleanRun, NoCauseIsFoundInThreeRepeatsOfAConfigurationWithoutOne) {
  // The seed's model and batch on a smaller dataset: about a second of training per run,
  // long enough that a rank's start-up or a stray millisecond is not a share of it.
  Config c;
  c.data.dataset_size = 8192;
  c.trainer.max_epochs = 3;
  c.trainer.logger = {};
  std::vector<int> repeats_with(kStragglerCauseWords.size(), 0);
  for (int repeat = 0; repeat < 3; ++repeat) {
    const std::string tag = "clean_" + std::to_string(repeat);
    const RunRecord one = run_training(DDPSCOPE_BINARY, c, 1, 3, "devices=1", testing::fresh_dir(tag + "_1"));
    const RunRecord two = run_training(DDPSCOPE_BINARY, c, 2, 3, "devices=2", testing::fresh_dir(tag + "_2"));
    ASSERT_TRUE(one.ok) << one.error;
    ASSERT_TRUE(two.ok) << two.error;
    FindingInputs in;
    in.device_runs = {&one, &two};
    in.workload = workload_from_summary(two.summary);
    for (const Finding& f : find_problems(in)) {
      for (const std::string& words : kCauseWords) {
        EXPECT_EQ(f.title.find(words), std::string::npos) << "repeat " << repeat << ": " << f.title << "\n" << f.detail;
      }
      if (f.title.find("holds the others back") == std::string::npos) continue;
      for (std::size_t i = 0; i < kStragglerCauseWords.size(); ++i) {
        if (f.detail.find(kStragglerCauseWords[i]) == std::string::npos) continue;
        ++repeats_with[i];
        std::cout << "repeat " << repeat << ": " << f.detail << "\n";
      }
    }
  }
  for (std::size_t i = 0; i < kStragglerCauseWords.size(); ++i) {
    EXPECT_LE(repeats_with[i], 1) << "\"" << kStragglerCauseWords[i] << "\" in " << repeats_with[i] << " repeats of 3";
  }
}

}  // namespace
}  // namespace ddp
