#pragma once
// A numeric CSV file loaded fully at construction: each row is input_dim inputs then
// output_dim targets. An optional header (a first line whose cells are not all numbers) is
// skipped, as are blank lines. Anything else that is not a finite number is a DataError
// naming file, line and column.
// Hand-written rather than a CSV library: only numbers are accepted (no quoting or
// escaping rules to get wrong), every refusal must name file:line:column, and a parser this
// small is easy to fuzz (fuzz/csv_fuzz.cpp) and to read whole.
#include <string>
#include <vector>

#include "ddpscope/dataset.h"

namespace ddp {

class CsvDataset : public Dataset {
 public:
  CsvDataset(const std::string& path, int64_t input_dim, int64_t output_dim);
  int64_t size() const override { return rows_; }
  int64_t input_dim() const override { return input_dim_; }
  int64_t output_dim() const override { return output_dim_; }
  // The file's rows; epoch is ignored.
  void fill(int64_t epoch, std::span<const int64_t> indices, float* x, float* y) const override;
  // The rows as loaded: inputs (rows, I) and targets (rows, O), for a GPU to upload once.
  std::span<const float> inputs() const { return x_; }
  std::span<const float> targets() const { return y_; }

 private:
  int64_t input_dim_, output_dim_;
  int64_t rows_ = 0;
  std::vector<float> x_;  // (rows, I)
  std::vector<float> y_;  // (rows, O)
};

}  // namespace ddp
