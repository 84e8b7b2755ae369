#pragma once
// GPU utilization and memory through NVML, with libnvidia-ml.so.1 opened by dlopen at run
// time, so one binary runs with or without an NVIDIA driver. We declare the
// handful of NVML entry points ourselves instead of including nvml.h: the header comes
// with the CUDA toolkit, which a CPU-only build does not have.
#include <optional>
#include <string>
#include <string_view>

namespace ddp {

// The NVML functions we call, as a table of pointers: dlsym fills it from the driver's
// library, and tests fill it with a fake driver to exercise the GPU path without a GPU.
// The types mirror nvml.h: nvmlReturn_t is a C enum (an int, NVML_SUCCESS = 0) and
// nvmlDevice_t an opaque pointer.
struct NvmlApi {
  using Return = int;
  using Device = void*;
  struct Utilization {    // nvmlUtilization_t
    unsigned int gpu;     // % of the last sample period in which a kernel ran
    unsigned int memory;  // % of it in which device memory was read or written
  };
  struct Memory {  // nvmlMemory_t (v1), bytes
    unsigned long long total;
    unsigned long long free;
    unsigned long long used;
  };
  static constexpr Return kSuccess = 0;

  Return (*init)() = nullptr;                                  // nvmlInit_v2
  Return (*shutdown)() = nullptr;                              // nvmlShutdown
  Return (*device_count)(unsigned int*) = nullptr;             // nvmlDeviceGetCount_v2
  Return (*device_handle)(unsigned int, Device*) = nullptr;    // nvmlDeviceGetHandleByIndex_v2
  Return (*device_by_bus_id)(const char*, Device*) = nullptr;  // nvmlDeviceGetHandleByPciBusId_v2
  Return (*device_index)(Device, unsigned int*) = nullptr;     // nvmlDeviceGetIndex
  Return (*utilization)(Device, Utilization*) = nullptr;       // nvmlDeviceGetUtilizationRates
  Return (*memory)(Device, Memory*) = nullptr;                 // nvmlDeviceGetMemoryInfo
  const char* (*error_string)(Return) = nullptr;               // nvmlErrorString
};

inline constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";

struct GpuReading {
  double utilization_percent = -1;
  double memory_used_mb = -1;  // MiB
};

// One NVML session: nvmlInit_v2 done and the devices counted. Closing (or destroying) it
// calls nvmlShutdown. The library is loaded by the process's first session and kept, as
// pynvml keeps it (its nvmlShutdown unloads nothing): a session costs NVML's own start and
// shutdown, which is what the seed's per-step probe pays.
class NvmlSession {
 public:
  NvmlSession() = default;
  ~NvmlSession();
  NvmlSession(NvmlSession&& other) noexcept;
  NvmlSession& operator=(NvmlSession&& other) noexcept;
  NvmlSession(const NvmlSession&) = delete;
  NvmlSession& operator=(const NvmlSession&) = delete;

  // The library (dlopen and dlsym, the first time) + init. On failure the session is closed
  // and `why_not` says why (the library is absent, a symbol is missing, init failed with
  // NVML's message).
  static NvmlSession open(const std::string& library, std::string* why_not);
  static NvmlSession open(const NvmlApi& api, std::string* why_not);

  bool is_open() const { return open_; }
  unsigned int device_count() const { return device_count_; }
  // nullopt when NVML fails for this device; `why_not` then says why.
  std::optional<GpuReading> read(unsigned int index, std::string* why_not = nullptr) const;
  // NVML's index of the GPU at this PCI bus id ("0000:3b:00.0", as cudaDeviceGetPCIBusId
  // gives it): NVML numbers the GPUs its own way, whatever CUDA_VISIBLE_DEVICES says.
  std::optional<unsigned int> index_of(const std::string& pci_bus_id) const;
  void close();

 private:
  std::string error_text(NvmlApi::Return code) const;

  NvmlApi api_;
  bool open_ = false;
  unsigned int device_count_ = 0;
};

// Prints "ddpscope: warning: GPU metrics are unavailable: <reason>" on stderr the first time
// it is called in this process, and nothing afterwards; returns whether it printed.
bool report_gpu_unavailable(std::string_view reason);

}  // namespace ddp
