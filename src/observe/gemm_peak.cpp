#include "observe/gemm_peak.h"

#include <algorithm>
#include <chrono>

#include "ddpscope/buffer.h"
#include "tensor/gemm.h"

namespace ddp {

double measure_gemm_peak_flops(double seconds) {
  constexpr int64_t kN = 512;
  Buffer a(kN * kN), b(kN * kN), c(kN * kN);
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = 1e-3f * static_cast<float>(i % 101);
    b[i] = 1e-3f * static_cast<float>(i % 103);
  }
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  double best = 1e30;
  for (int rep = 0; rep < 3 || Clock::now() < deadline; ++rep) {
    const auto t0 = Clock::now();
    gemm(Trans::kNo, Trans::kNo, kN, kN, kN, 1.0f, a.data(), kN, b.data(), kN, 0.0f, c.data(), kN);
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
    if (rep > 200) break;
  }
  return 2.0 * kN * kN * kN / best;
}

}  // namespace ddp
