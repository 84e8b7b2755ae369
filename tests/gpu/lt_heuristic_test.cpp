// How a cuBLASLt heuristic's answer is read (host only: no GPU needed).
#include <gtest/gtest.h>

#include "gpu/lt_gemm.h"

namespace ddp {
namespace {

TEST(LtHeuristic, AnAlgorithmIsUsedOnlyWhenReturnedWithASuccessfulState) {
  EXPECT_EQ(read_heuristic(CUBLAS_STATUS_SUCCESS, 1, CUBLAS_STATUS_SUCCESS), HeuristicAnswer::kUse);
  // Returned, but its state says it cannot run: refused, computed by ddpscope's kernel.
  EXPECT_EQ(read_heuristic(CUBLAS_STATUS_SUCCESS, 1, CUBLAS_STATUS_NOT_SUPPORTED), HeuristicAnswer::kRefused);
  EXPECT_EQ(read_heuristic(CUBLAS_STATUS_SUCCESS, 1, CUBLAS_STATUS_INVALID_VALUE), HeuristicAnswer::kRefused);
  EXPECT_EQ(read_heuristic(CUBLAS_STATUS_SUCCESS, 0, CUBLAS_STATUS_SUCCESS), HeuristicAnswer::kRefused);
  EXPECT_EQ(read_heuristic(CUBLAS_STATUS_NOT_SUPPORTED, 0, CUBLAS_STATUS_SUCCESS), HeuristicAnswer::kRefused);
  EXPECT_EQ(read_heuristic(CUBLAS_STATUS_INVALID_VALUE, 0, CUBLAS_STATUS_SUCCESS), HeuristicAnswer::kRefused);
  EXPECT_EQ(read_heuristic(CUBLAS_STATUS_ALLOC_FAILED, 0, CUBLAS_STATUS_SUCCESS), HeuristicAnswer::kError);
}

}  // namespace
}  // namespace ddp
