#pragma once
// DDP_HOST_DEVICE marks a function that nvcc compiles for the CPU and the GPU alike (and
// g++ as an ordinary inline function): code that both must run to the same bits.
#if defined(__CUDACC__)
#define DDP_HOST_DEVICE __host__ __device__
#else
#define DDP_HOST_DEVICE
#endif
