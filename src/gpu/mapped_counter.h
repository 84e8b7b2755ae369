#pragma once
// A count the GPU writes into host memory as it works, read on the host while the GPU runs:
// how a wait sees progress (gpu/progress_watch.h). Pinned and mapped; the device keeps its own
// copy and writes the host's after each increment (a posted write: no round trip to the host).
#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>

#include "gpu/cuda_check.h"
#include "gpu/device_array.h"

namespace ddp {

class MappedCounter {
 public:
  MappedCounter() : device_count_(1) {
    check_cuda(cudaHostAlloc(reinterpret_cast<void**>(&host_), sizeof(int64_t), cudaHostAllocMapped), "cudaHostAlloc");
    *host_ = 0;
    check_cuda(cudaHostGetDevicePointer(reinterpret_cast<void**>(&host_on_device_), host_, 0),
               "cudaHostGetDevicePointer");
    const int64_t zero = 0;
    device_count_.copy_from(&zero, 1);
  }
  MappedCounter(const MappedCounter&) = delete;
  MappedCounter& operator=(const MappedCounter&) = delete;
  ~MappedCounter() { cudaFreeHost(host_); }

  int64_t* device_count() { return device_count_.data(); }
  int64_t* host_on_device() { return host_on_device_; }
  int64_t read() const { return std::atomic_ref<int64_t>(*host_).load(std::memory_order_acquire); }

 private:
  int64_t* host_ = nullptr;
  int64_t* host_on_device_ = nullptr;
  DeviceArray<int64_t> device_count_;
};

}  // namespace ddp
