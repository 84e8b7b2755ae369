// DDP_CHECK and its comparison forms abort with file:line, the expression and, for a
// comparison, both values: what the next engineer needs to find the bug.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "base/check.h"
#include "ddpscope/error.h"

namespace ddp {
namespace {

enum class Colour { kRed = 2, kBlue = 5 };

TEST(CheckDeathTest, PlainCheckNamesTheExpressionAndTheReason) {
  const int layers = 3;
  EXPECT_DEATH(DDP_CHECK(layers < 0, "layers must be negative here"),
               "internal error: .*check_test.cpp:[0-9]+: check 'layers < 0' failed: layers must be negative here");
}

TEST(CheckDeathTest, ComparisonPrintsBothValues) {
  const int64_t batch = 300;
  const int64_t max_batch = 256;
  EXPECT_DEATH(DDP_CHECK_LE(batch, max_batch, "batch larger than the workspace"),
               "check 'batch <= max_batch' failed \\(300 vs 256\\): batch larger than the workspace");
  const std::size_t seven = 7;
  const std::size_t eight = 8;
  EXPECT_DEATH(DDP_CHECK_EQ(seven, eight), "check 'seven == eight' failed \\(7 vs 8\\)\n");
  EXPECT_DEATH(DDP_CHECK_NE(Colour::kRed, Colour::kRed), "\\(2 vs 2\\)");
  EXPECT_DEATH(DDP_CHECK_EQ(std::string("a"), "b"), "\\(\"a\" vs \"b\"\\)");
}

TEST(CheckTest, HoldingComparisonsPassAndEvaluateEachOperandOnce) {
  int calls = 0;
  auto next = [&calls] { return ++calls; };
  DDP_CHECK_EQ(next(), 1);
  DDP_CHECK_LT(1, 2);
  DDP_CHECK_GE(2.5, 2.5);
  DDP_CHECK_GT(Colour::kBlue, Colour::kRed);
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace ddp
