// The random dataset's generator: one seed epoch's samples (5000 rows of 10 inputs and 1
// target) from Philox counters, as the loader fills batches. Run before and after a change
// to normal_rows in one session and compare the ratio (docs/performance.md).
#include <benchmark/benchmark.h>

#include <numeric>
#include <vector>

#include "data/normal_rows.h"

namespace {

void BM_NormalRowsSeedEpoch(benchmark::State& state) {
  const int64_t rows = 5000, inputs = 10, targets = 1;
  std::vector<int64_t> indices(rows);
  std::iota(indices.begin(), indices.end(), 0);
  std::vector<float> x(rows * inputs), y(rows * targets);
  for (auto _ : state) {
    ddp::normal_rows(0x1234, uint64_t{7} << 32, indices, x.data(), inputs, y.data(), targets);
    benchmark::DoNotOptimize(x.data());
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(state.iterations() * rows * (inputs + targets));
}
BENCHMARK(BM_NormalRowsSeedEpoch);

}  // namespace

BENCHMARK_MAIN();
