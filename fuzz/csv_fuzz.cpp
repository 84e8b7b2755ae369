// The CSV dataset reader on arbitrary bytes, through a file as it only takes paths. The
// first byte picks the column split (1-4 inputs, 1-2 targets); refusing is a DataError.
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "base/check.h"
#include "data/csv_dataset.h"
#include "ddpscope/error.h"
#include "fuzz_input_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const int64_t input_dim = 1 + (data[0] & 3), output_dim = 1 + ((data[0] >> 2) & 1);
  const std::string& path = ddp::fuzz::write_input("csv_fuzz", data + 1, size - 1);
  try {
    const ddp::CsvDataset dataset(path, input_dim, output_dim);
    DDP_CHECK(dataset.size() > 0 && dataset.input_dim() == input_dim && dataset.output_dim() == output_dim);
    std::vector<int64_t> indices(static_cast<size_t>(dataset.size()));
    std::iota(indices.begin(), indices.end(), 0);
    std::vector<float> x(indices.size() * input_dim), y(indices.size() * output_dim);
    dataset.fill(0, indices, x.data(), y.data());
    for (const float v : x) DDP_CHECK(std::isfinite(v), "a non-finite input was accepted");
    for (const float v : y) DDP_CHECK(std::isfinite(v), "a non-finite target was accepted");
  } catch (const ddp::Error&) {
  }
  return 0;
}
