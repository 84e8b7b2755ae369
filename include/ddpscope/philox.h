#pragma once
// Philox4x32-10 (Salmon et al., SC'11), written once for the CPU and the GPU: nvcc compiles
// the same functions as __host__ __device__, so a counter gives the same bits on either and a
// sample is the same whichever device made it. Integer arithmetic only.
#include <cstdint>

#include "ddpscope/host_device.h"

namespace ddp {

struct PhiloxBlock {
  uint32_t v[4];
};

// The block of counter (lo, hi) under key64.
DDP_HOST_DEVICE inline PhiloxBlock philox4x32_10(uint64_t lo, uint64_t hi, uint64_t key64) {
  uint32_t c0 = static_cast<uint32_t>(lo), c1 = static_cast<uint32_t>(lo >> 32);
  uint32_t c2 = static_cast<uint32_t>(hi), c3 = static_cast<uint32_t>(hi >> 32);
  uint32_t k0 = static_cast<uint32_t>(key64), k1 = static_cast<uint32_t>(key64 >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{0xD2511F53} * c0;
    const uint64_t p1 = uint64_t{0xCD9E8D57} * c2;
    const uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1 ^ k0, n2 = static_cast<uint32_t>(p0 >> 32) ^ c3 ^ k1;
    c1 = static_cast<uint32_t>(p1);
    c3 = static_cast<uint32_t>(p0);
    c0 = n0;
    c2 = n2;
    k0 += 0x9E3779B9;
    k1 += 0xBB67AE85;
  }
  return {{c0, c1, c2, c3}};
}

// Uniform in (0, 1], never 0 so that log() is finite; exact (24 bits and a power of two).
DDP_HOST_DEVICE inline float uniform_open0(uint32_t bits) { return (static_cast<float>(bits >> 8) + 1.0f) * 0x1p-24f; }

}  // namespace ddp
