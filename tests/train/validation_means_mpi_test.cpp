// Runs under mpirun with 2 and 3 ranks (tests/CMakeLists.txt).
#include <gtest/gtest.h>

#include "dist/mpi_communicator.h"
#include "train/loop/validation_means.h"

namespace ddp {
namespace {

TEST(ValidationMeans, RanksWithoutSamplesOrWithOtherMetricsMergeByName) {
  auto comm = make_mpi_communicator();
  // Rank r validated r samples of loss r (rank zero none), and only the last rank logged "extra".
  MetricSink mine;
  for (int i = 0; i < comm->rank(); ++i) mine.record("val_loss", comm->rank(), 1);
  if (comm->rank() == comm->size() - 1) mine.record("extra", 7.0, 2);
  const Metrics means = validation_means(*comm, mine.entries());
  double sum = 0, count = 0;
  for (int r = 0; r < comm->size(); ++r) sum += r * r, count += r;
  ASSERT_EQ(means.size(), 2u);
  EXPECT_EQ(means[0].first, "val_loss");
  EXPECT_DOUBLE_EQ(means[0].second, sum / count);
  EXPECT_EQ(means[1].first, "extra");
  EXPECT_DOUBLE_EQ(means[1].second, 7.0);
}

TEST(ValidationMeans, NoSampleAnywhereGivesNoMetric) {
  auto comm = make_mpi_communicator();
  EXPECT_TRUE(validation_means(*comm, {}).empty());
}

}  // namespace
}  // namespace ddp
