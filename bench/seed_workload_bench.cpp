// End-to-end benchmark of the seed workload on one device: 200 epochs x 5000 samples,
// batch 256, accumulation 3, validation every epoch. Prints the wall time, its ratio to the
// compute floor measured in the same run (every GEMM of the workload at the best
// single-core rate of OpenBLAS and oneDNN per shape), and the framework's own per-step
// overhead. Usage: seed_workload_bench [EPOCHS]   (taskset -c 0 to pin it)
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <vector>

#include "ddpscope/buffer.h"
#include "ddpscope/mlp.h"
#include "ddpscope/trainer.h"
#include "tensor/gemm.h"
#include "train/loop/regression_task.h"
#include "train/records/run_summary.h"

namespace {

using ddp::GemmBackend;
using ddp::Trans;

struct Gemm {
  Trans ta, tb;
  int64_t m, n, k;
};

// Median seconds of one GEMM at the faster library for its shape.
double best_gemm_seconds(const Gemm& g) {
  ddp::Buffer a(g.m * g.k + 64), b(g.k * g.n + 64), c(g.m * g.n + 64);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = 0.001f * static_cast<float>(i % 97);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = 0.002f * static_cast<float>(i % 89);
  const int64_t lda = g.ta == Trans::kYes ? g.m : g.k, ldb = g.tb == Trans::kYes ? g.k : g.n;
  double best = 1e30;
  for (GemmBackend backend : {GemmBackend::kOpenBlas, GemmBackend::kOneDnn}) {
    std::vector<double> times;
    for (int rep = 0; rep < 200; ++rep) {
      const auto t0 = std::chrono::steady_clock::now();
      ddp::gemm_with(backend, g.ta, g.tb, g.m, g.n, g.k, 1.0f, a.data(), lda, b.data(), ldb, 1.0f, c.data(), g.n);
      times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
    best = std::min(best, times[times.size() / 2]);
  }
  return best;
}

// GEMM seconds of one micro-batch of b samples: forward, and for training dW and dX
// (no dX for the first layer), as the MLP runs them.
double step_gemm_seconds(const ddp::MlpShape& shape, int64_t b, bool training) {
  const std::vector<int64_t> w = shape.widths();
  double seconds = 0;
  for (std::size_t l = 0; l + 1 < w.size(); ++l) {
    const int64_t in = w[l], out = w[l + 1];
    seconds += best_gemm_seconds({Trans::kNo, Trans::kYes, b, out, in});
    if (!training) continue;
    seconds += best_gemm_seconds({Trans::kYes, Trans::kNo, out, in, b});
    if (l > 0) seconds += best_gemm_seconds({Trans::kNo, Trans::kNo, b, in, out});
  }
  return seconds;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t epochs = argc > 1 ? std::atoll(argv[1]) : 200;
  ddp::set_gemm_threads(1);
  ddp::Config config;  // the seed's defaults
  config.trainer.max_epochs = epochs;
  config.trainer.accumulate_grad_batches = 3;
  config.trainer.progress_bar = ddp::ProgressMode::kOff;
  const auto root = std::filesystem::temp_directory_path() / "ddpscope_seed_bench";
  std::filesystem::remove_all(root);
  config.trainer.default_root_dir = root.string();

  // The floor: 19 full batches of 256 and one of 136 per epoch, trained and validated.
  const int64_t n = config.data.dataset_size, b = config.data.batch_size;
  const int64_t full = n / b, rest = n % b;
  const double train_floor =
      full * step_gemm_seconds(config.model, b, true) + (rest ? step_gemm_seconds(config.model, rest, true) : 0.0);
  const double val_floor =
      full * step_gemm_seconds(config.model, b, false) + (rest ? step_gemm_seconds(config.model, rest, false) : 0.0);
  const double floor = epochs * (train_floor + val_floor);

  ddp::RegressionDataModule data(config);
  ddp::RegressionModel model(config);
  ddp::Trainer trainer(config.trainer, ddp::join_world(config.trainer));
  trainer.fit(model, data);
  const ddp::RunSummary& stats = ddp::run_summary(trainer);
  const double wall = stats.wall_seconds;
  const int64_t micro_batches = epochs * (full + (rest ? 1 : 0));
  const double flops =
      epochs * n * (model.network().training_flops_per_sample() + model.network().forward_flops_per_sample());

  std::printf("seed workload: %lld epochs x %lld samples, batch %lld, accumulation 3, validation every epoch\n",
              static_cast<long long>(epochs), static_cast<long long>(n), static_cast<long long>(b));
  std::printf("  wall                     %8.2f s  (%.1f GFLOP/s of model GEMM FLOPs)\n", wall, flops / wall * 1e-9);
  std::printf("  compute floor            %8.2f s  (every GEMM at the best measured single-core rate)\n", floor);
  std::printf("  ratio wall / floor       %8.3f\n", wall / floor);
  std::printf("  overhead per micro-batch %8.1f us  (%.1f %% of a micro-batch's time; validation included)\n",
              (wall - floor) / micro_batches * 1e6, 100.0 * (wall - floor) / wall);
  std::printf("  phases (s):");
  for (std::size_t p = 0; p < ddp::kPhaseCount; ++p) {
    if (stats.phases_per_rank[0][p] > 0) {
      std::printf(" %s %.3f", std::string(ddp::kPhaseNames[p]).c_str(), stats.phases_per_rank[0][p]);
    }
  }
  std::printf("\n  floor split: training %.2f s, validation %.2f s\n", epochs * train_floor, epochs * val_floor);
  std::filesystem::remove_all(root);
  return 0;
}
