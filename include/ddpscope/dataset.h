#pragma once
// Datasets produce samples by index. fill() is const and thread-safe: loader threads call
// it concurrently for different batches.
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace ddp {

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  virtual int64_t input_dim() const = 0;
  virtual int64_t output_dim() const = 0;
  // Writes the samples `indices` of `epoch` as rows: x is (n, input_dim), y (n, output_dim).
  virtual void fill(int64_t epoch, std::span<const int64_t> indices, float* x, float* y) const = 0;
};

// One micro-batch as a step sees it: rows of inputs and targets in the loader's buffers.
struct Batch {
  const float* x = nullptr;  // (size, input_dim)
  const float* y = nullptr;  // (size, output_dim)
  int64_t size = 0;
  int64_t index = 0;  // batch index within the epoch
};

struct DatasetSpec {
  std::string kind = "random";  // random | teacher | csv:PATH
  int64_t size = 5000;          // ignored for csv (the file's rows)
  int64_t input_dim = 10;
  int64_t output_dim = 1;
  uint64_t seed = 0;
};

// Builds the dataset named by spec.kind; unknown kinds are a UsageError, bad CSV a DataError.
std::unique_ptr<Dataset> make_dataset(const DatasetSpec& spec);

}  // namespace ddp
