#pragma once
// This core's single-thread SGEMM rate, measured now on a square GEMM large enough to run
// at the library's best: the denominator of the model-FLOP share (the MFU idea, on CPU).
// Measured rather than assumed because the cores this runs on differ by 2x (docs/performance.md).
namespace ddp {

// FLOP/s of the best of a few 512^3 GEMMs, taking about `seconds`.
double measure_gemm_peak_flops(double seconds = 0.05);

}  // namespace ddp
