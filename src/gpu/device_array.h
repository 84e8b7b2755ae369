#pragma once
// A device copy of a host array for the host-memory helpers of src/gpu (the functions that
// tests and checks call, and the training step's buffers, allocated before its first step):
// allocated and filled on construction, freed however the scope ends.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "base/check.h"
#include "gpu/cuda_check.h"

namespace ddp {

template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(std::size_t count) : count_(count) {
    check_cuda(cudaMalloc(reinterpret_cast<void**>(&data_), count * sizeof(T) + 1),
               "cudaMalloc");  // + 1: never a zero-size allocation
    check_cuda(cudaMemset(data_, 0, count * sizeof(T)), "cudaMemset");
  }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) {
    if (count_ > 0) {
      check_cuda(cudaMemcpy(data_, host.data(), count_ * sizeof(T), cudaMemcpyHostToDevice),
                 "cudaMemcpy to the device");
    }
  }
  DeviceArray(const DeviceArray&) = delete;
  DeviceArray& operator=(const DeviceArray&) = delete;
  ~DeviceArray() { cudaFree(data_); }

  T* data() const { return data_; }
  std::size_t count() const { return count_; }
  // Copies n host values (at most count()) to the start of the array (synchronises). A
  // pointer and a count, not a span: nvcc compiles this header as C++17.
  void copy_from(const T* host, std::size_t n) {
    DDP_CHECK_LE(n, count_);
    if (n > 0) check_cuda(cudaMemcpy(data_, host, n * sizeof(T), cudaMemcpyHostToDevice), "cudaMemcpy to the device");
  }
  // Copies the device's values into host (of the same count; synchronises with the device).
  void copy_to(std::vector<T>& host) const {
    DDP_CHECK_EQ(host.size(), count_);
    if (count_ > 0) {
      check_cuda(cudaMemcpy(host.data(), data_, count_ * sizeof(T), cudaMemcpyDeviceToHost),
                 "cudaMemcpy from the device");
    }
  }
  std::vector<T> to_host() const {
    std::vector<T> host(count_);
    copy_to(host);
    return host;
  }

 private:
  T* data_ = nullptr;
  std::size_t count_ = 0;
};

}  // namespace ddp
