#include "ddpscope/dataset.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <vector>

#include "data/teacher_dataset.h"
#include "ddpscope/error.h"
#include "ddpscope/random.h"

namespace ddp {
namespace {

DatasetSpec spec_of(const std::string& kind, int64_t size = 1000, int64_t input_dim = 10, int64_t output_dim = 1,
                    uint64_t seed = 0) {
  DatasetSpec spec;
  spec.kind = kind;
  spec.size = size;
  spec.input_dim = input_dim;
  spec.output_dim = output_dim;
  spec.seed = seed;
  return spec;
}

struct Rows {
  std::vector<float> x, y;
};

Rows fill(const Dataset& dataset, int64_t epoch, const std::vector<int64_t>& indices) {
  Rows rows{std::vector<float>(indices.size() * dataset.input_dim()),
            std::vector<float>(indices.size() * dataset.output_dim())};
  dataset.fill(epoch, indices, rows.x.data(), rows.y.data());
  return rows;
}

std::vector<int64_t> range(int64_t n) {
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

TEST(RandomDataset, IsAPureFunctionOfSeedEpochIndex) {
  const auto a = make_dataset(spec_of("random", 100, 10, 1, 5));
  const auto b = make_dataset(spec_of("random", 100, 10, 1, 5));
  EXPECT_EQ(a->size(), 100);
  EXPECT_EQ(a->input_dim(), 10);
  EXPECT_EQ(a->output_dim(), 1);
  const Rows r1 = fill(*a, 3, range(20));
  const Rows r2 = fill(*a, 3, range(20));
  const Rows r3 = fill(*b, 3, range(20));
  EXPECT_EQ(r1.x, r2.x);
  EXPECT_EQ(r1.y, r2.y);
  EXPECT_EQ(r1.x, r3.x);
  EXPECT_EQ(r1.y, r3.y);
}

TEST(RandomDataset, DiffersAcrossEpochsAndSeeds) {
  const auto a = make_dataset(spec_of("random", 100, 10, 1, 5));
  const auto b = make_dataset(spec_of("random", 100, 10, 1, 6));
  const Rows e0 = fill(*a, 0, range(20));
  const Rows e1 = fill(*a, 1, range(20));
  const Rows s6 = fill(*b, 0, range(20));
  for (size_t i = 0; i < e0.x.size(); ++i) {
    EXPECT_NE(e0.x[i], e1.x[i]) << i;
    EXPECT_NE(e0.x[i], s6.x[i]) << i;
  }
  for (size_t i = 0; i < e0.y.size(); ++i) {
    EXPECT_NE(e0.y[i], e1.y[i]) << i;
    EXPECT_NE(e0.y[i], s6.y[i]) << i;
  }
}

TEST(RandomDataset, SameSampleWhateverTheBatch) {
  const auto d = make_dataset(spec_of("random", 100, 10, 3, 1));
  const Rows alone = fill(*d, 2, {7});
  const Rows batch = fill(*d, 2, {3, 7, 9});
  for (int e = 0; e < 10; ++e) EXPECT_EQ(alone.x[e], batch.x[10 + e]) << e;
  for (int e = 0; e < 3; ++e) EXPECT_EQ(alone.y[e], batch.y[3 + e]) << e;
}

TEST(RandomDataset, FollowsNormal4) {
  // Row = x then y; element e comes from normal4(key, epoch << 32 | e / 4, index)[e % 4].
  const auto d = make_dataset(spec_of("random", 1000, 10, 1, 9));
  const std::vector<int64_t> indices = {0, 1, 17, 999};
  const Rows rows = fill(*d, 4, indices);
  const uint64_t key = stream_key(9, kStreamData);
  for (size_t j = 0; j < indices.size(); ++j) {
    for (int e = 0; e < 11; ++e) {
      const float expected = normal4(key, (uint64_t{4} << 32) | (e / 4), indices[j])[e % 4];
      const float got = e < 10 ? rows.x[j * 10 + e] : rows.y[j];
      EXPECT_NEAR(got, expected, 1e-5) << "sample " << indices[j] << " element " << e;
    }
  }
}

TEST(RandomDataset, StandardNormalMoments) {
  const int64_t n = 20000;
  const auto d = make_dataset(spec_of("random", n, 10, 1, 3));
  const Rows rows = fill(*d, 0, range(n));
  double sum = 0, sum2 = 0, sum4 = 0;
  for (const float v : rows.x) {
    sum += v;
    sum2 += double{v} * v;
    sum4 += double{v} * v * v * v;
  }
  const double count = static_cast<double>(rows.x.size());
  EXPECT_NEAR(sum / count, 0.0, 0.01);
  EXPECT_NEAR(sum2 / count, 1.0, 0.02);
  EXPECT_NEAR(sum4 / count, 3.0, 0.1);  // a normal's kurtosis
  double ysum = 0, ysum2 = 0;
  for (const float v : rows.y) {
    ysum += v;
    ysum2 += double{v} * v;
  }
  EXPECT_NEAR(ysum / n, 0.0, 0.03);
  EXPECT_NEAR(ysum2 / n, 1.0, 0.05);
}

TEST(TeacherDataset, FixedAcrossEpochsAndBatches) {
  const auto d = make_dataset(spec_of("teacher", 500, 10, 2, 1));
  const Rows e0 = fill(*d, 0, range(50));
  const Rows e7 = fill(*d, 7, range(50));
  EXPECT_EQ(e0.x, e7.x);
  EXPECT_EQ(e0.y, e7.y);
  const Rows alone = fill(*d, 0, {7});
  for (int e = 0; e < 10; ++e) EXPECT_EQ(alone.x[e], e0.x[70 + e]);
  for (int e = 0; e < 2; ++e) EXPECT_EQ(alone.y[e], e0.y[14 + e]);
  const auto other_seed = make_dataset(spec_of("teacher", 500, 10, 2, 2));
  EXPECT_NE(fill(*other_seed, 0, range(50)).y, e0.y);
}

TEST(TeacherDataset, TargetsAreTheTeacherPlusSmallNoise) {
  const int64_t n = 5000;
  const TeacherDataset d(n, 10, 1, 42);
  const Rows rows = fill(d, 0, range(n));
  double x_sum2 = 0;
  for (const float v : rows.x) x_sum2 += double{v} * v;
  EXPECT_NEAR(x_sum2 / static_cast<double>(rows.x.size()), 1.0, 0.03);

  double y_sum = 0, y_sum2 = 0, t_sum = 0, t_sum2 = 0, ty = 0, residual2 = 0;
  for (int64_t j = 0; j < n; ++j) {
    float clean = 0;
    d.teacher(&rows.x[j * 10], &clean);
    const double y = rows.y[j];
    y_sum += y;
    y_sum2 += y * y;
    t_sum += clean;
    t_sum2 += double{clean} * clean;
    ty += clean * y;
    residual2 += (y - clean) * (y - clean);
  }
  const double y_mean = y_sum / n, t_mean = t_sum / n;
  const double y_var = y_sum2 / n - y_mean * y_mean, t_var = t_sum2 / n - t_mean * t_mean;
  const double correlation = (ty / n - y_mean * t_mean) / std::sqrt(y_var * t_var);
  EXPECT_NEAR(y_mean, 0.0, 0.1);
  EXPECT_NEAR(y_var, 1.0, 0.15);
  EXPECT_GT(correlation, 0.999);
  EXPECT_NEAR(std::sqrt(residual2 / n), TeacherDataset::kNoise, 0.002);
}

TEST(TeacherDataset, IsNotLinearInTheInputs) {
  // A least-squares linear fit must leave a clear residual, or the task would be trivial.
  const int64_t n = 4000, in = 3;
  const TeacherDataset d(n, in, 1, 7);
  const Rows rows = fill(d, 0, range(n));
  // Normal equations for [x, 1] (4 unknowns), solved by Gaussian elimination in double.
  double a[4][5] = {};
  for (int64_t j = 0; j < n; ++j) {
    const double f[4] = {rows.x[j * in], rows.x[j * in + 1], rows.x[j * in + 2], 1.0};
    for (int r = 0; r < 4; ++r) {
      for (int c = 0; c < 4; ++c) a[r][c] += f[r] * f[c];
      a[r][4] += f[r] * rows.y[j];
    }
  }
  for (int p = 0; p < 4; ++p) {
    for (int r = p + 1; r < 4; ++r) {
      const double m = a[r][p] / a[p][p];
      for (int c = p; c < 5; ++c) a[r][c] -= m * a[p][c];
    }
  }
  double w[4];
  for (int r = 3; r >= 0; --r) {
    double s = a[r][4];
    for (int c = r + 1; c < 4; ++c) s -= a[r][c] * w[c];
    w[r] = s / a[r][r];
  }
  double residual2 = 0;
  for (int64_t j = 0; j < n; ++j) {
    const double fit = w[0] * rows.x[j * in] + w[1] * rows.x[j * in + 1] + w[2] * rows.x[j * in + 2] + w[3];
    residual2 += (rows.y[j] - fit) * (rows.y[j] - fit);
  }
  EXPECT_GT(residual2 / n, 0.02);
}

TEST(MakeDataset, UnknownKindIsAUsageError) {
  try {
    make_dataset(spec_of("bogus"));
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
    EXPECT_STREQ(e.what(), "--data 'bogus' is not a dataset; accepted: random, teacher, csv:PATH");
  }
  EXPECT_THROW(make_dataset(spec_of("csv:")), UsageError);
  EXPECT_THROW(make_dataset(spec_of("Random")), UsageError);
}

TEST(MakeDataset, SizeAndDimsMustBePositive) {
  for (const char* kind : {"random", "teacher"}) {
    try {
      make_dataset(spec_of(kind, 0));
      FAIL() << "no error";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--dataset-size 0"), std::string::npos) << e.what();
    }
    EXPECT_THROW(make_dataset(spec_of(kind, -5)), UsageError);
  }
  try {
    make_dataset(spec_of("random", 10, 0, 1));
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--input-dim 0"), std::string::npos) << e.what();
  }
  try {
    make_dataset(spec_of("teacher", 10, 3, -1));
    FAIL() << "no error";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("--output-dim -1"), std::string::npos) << e.what();
  }
}

// Each test writes its CSV into a fresh folder of its own.
class CsvDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() / ("ddpscope_csv_" + std::to_string(::getpid()) + "_" + info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& text, const std::string& name = "data.csv") {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  // The DataError that loading `text` with (input_dim, output_dim) raises; its message with
  // the path replaced by "F".
  std::string error_of(const std::string& text, int64_t input_dim = 2, int64_t output_dim = 1) {
    const std::string path = write(text);
    try {
      make_dataset(spec_of("csv:" + path, 0, input_dim, output_dim));
    } catch (const DataError& e) {
      EXPECT_EQ(e.code(), ExitCode::kData);
      std::string message = e.what();
      if (message.starts_with(path)) message = "F" + message.substr(path.size());
      return message;
    }
    ADD_FAILURE() << "no DataError for:\n" << text;
    return "";
  }

  std::filesystem::path dir_;
};

TEST_F(CsvDatasetTest, ReadsRowsWithHeaderTrimmingAndBlankTrailingLine) {
  const std::string path = write("a, b ,target\r\n 1.5 ,-2,3e2\r\n\t4, +5 ,\"6\"\r\n\r\n");
  const auto d = make_dataset(spec_of("csv:" + path, 0, 2, 1));
  ASSERT_EQ(d->size(), 2);
  EXPECT_EQ(d->input_dim(), 2);
  EXPECT_EQ(d->output_dim(), 1);
  const Rows rows = fill(*d, 5, {1, 0});
  EXPECT_EQ(rows.x, (std::vector<float>{4, 5, 1.5f, -2}));
  EXPECT_EQ(rows.y, (std::vector<float>{6, 300}));
}

TEST_F(CsvDatasetTest, ReadsRowsWithoutHeader) {
  const std::string path = write("1,2,3,4\n5,6,7,8");
  const auto d = make_dataset(spec_of("csv:" + path, 0, 2, 2));
  ASSERT_EQ(d->size(), 2);
  const Rows rows = fill(*d, 0, {0, 1});
  EXPECT_EQ(rows.x, (std::vector<float>{1, 2, 5, 6}));
  EXPECT_EQ(rows.y, (std::vector<float>{3, 4, 7, 8}));
}

TEST_F(CsvDatasetTest, SkipsBlankLinesAndAcceptsTinyAndLargeValues) {
  const std::string path = write("x,y\n\n1e-40,-3.4e38\n   \n0.25,7\n");
  const auto d = make_dataset(spec_of("csv:" + path, 0, 1, 1));
  ASSERT_EQ(d->size(), 2);
  const Rows rows = fill(*d, 0, {0, 1});
  EXPECT_EQ(rows.x[1], 0.25f);
  EXPECT_EQ(rows.y[0], -3.4e38f);
}

TEST_F(CsvDatasetTest, EmptyFile) {
  EXPECT_EQ(error_of(""), "F:1:1: empty file: no data rows");
  EXPECT_EQ(error_of("\n  \n"), "F:1:1: empty file: no data rows");
}

TEST_F(CsvDatasetTest, HeaderOnly) { EXPECT_EQ(error_of("a,b,c\n"), "F:2:1: no data rows after the header"); }

TEST_F(CsvDatasetTest, RaggedRow) {
  EXPECT_EQ(error_of("a,b,c\n1,2,3\n4,5\n"), "F:3:3: ragged row: found 2 columns, expected 3");
  EXPECT_EQ(error_of("1,2,3\n4,5,6,7\n"), "F:2:4: ragged row: found 4 columns, expected 3");
}

TEST_F(CsvDatasetTest, NonNumericCell) {
  EXPECT_EQ(error_of("a,b,c\n1,2,3\n4,abc,6\n"), "F:3:2: cell 'abc' is not a number");
  EXPECT_EQ(error_of("1,2,3\n4,5,6x\n"), "F:2:3: cell '6x' is not a number");
  EXPECT_EQ(error_of("1,,3\n"), "F:1:2: empty cell, expected a number");
  EXPECT_EQ(error_of("1,2,3\n4,1.5.2,6\n"), "F:2:2: cell '1.5.2' is not a number");
  // A first line with numbers in it is data, not a header to skip.
  EXPECT_EQ(error_of("0x1,2,3\n4,5,6\n"), "F:1:1: cell '0x1' is not a number");
  // A NUL would end the message where it is printed.
  EXPECT_EQ(error_of(std::string("1,2,3\n4,5\0x,6\n", 14)), "F:2:2: cell '5\\x00x' is not a number");
}

TEST_F(CsvDatasetTest, NanAndInf) {
  EXPECT_EQ(error_of("1,2,3\n4,nan,6\n"), "F:2:2: cell 'nan' is NaN");
  EXPECT_EQ(error_of("1,2,inf\n"), "F:1:3: cell 'inf' is infinite");
  EXPECT_EQ(error_of("x,y,z\n-Infinity,2,3\n"), "F:2:1: cell '-Infinity' is infinite");
  EXPECT_EQ(error_of("1,2,1e39\n"), "F:1:3: cell '1e39' is out of the range of a float");
  EXPECT_EQ(error_of("1,2,1e999\n"), "F:1:3: cell '1e999' is out of the range of a float");
}

TEST_F(CsvDatasetTest, ColumnsDoNotMatchTheModel) {
  EXPECT_EQ(error_of("1,2\n3,4\n", 2, 1),
            "F:1:3: 2 columns, but --input-dim 2 and --output-dim 1 expect 3 (the inputs, then the targets)");
  EXPECT_EQ(error_of("a,b,c,d\n1,2,3,4\n", 2, 1),
            "F:1:4: 4 columns, but --input-dim 2 and --output-dim 1 expect 3 (the inputs, then the targets)");
}

TEST_F(CsvDatasetTest, MissingFileOrDirectory) {
  const std::string missing = (dir_ / "nope.csv").string();
  try {
    make_dataset(spec_of("csv:" + missing, 0, 2, 1));
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()), missing + ": cannot open: No such file or directory");
  }
  try {
    make_dataset(spec_of("csv:" + dir_.string(), 0, 2, 1));
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
  // Neither blocks nor grows without bound: only a regular file is read.
  const std::string fifo = (dir_ / "rows.fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {fifo, std::string("/dev/zero")}) {
    try {
      make_dataset(spec_of("csv:" + path, 0, 2, 1));
      FAIL() << "no error for " << path;
    } catch (const DataError& e) {
      EXPECT_EQ(std::string(e.what()), path + (path == fifo ? ": is a FIFO" : ": is a character device") +
                                           ", expected a CSV file (--data csv:PATH)");
    }
  }
}

TEST_F(CsvDatasetTest, IndexOutOfRangeIsAnInternalError) {
  const std::string path = write("1,2,3\n");
  const auto d = make_dataset(spec_of("csv:" + path, 0, 2, 1));
  float x[2], y[1];
  const int64_t index = 1;
  EXPECT_DEATH(d->fill(0, std::span(&index, 1), x, y), "sample index out of range");
}

}  // namespace
}  // namespace ddp
