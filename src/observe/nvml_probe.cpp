#include "observe/nvml_probe.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <utility>

namespace ddp {
namespace {

template <typename Function>
bool resolve(void* library, const char* name, Function& function, std::string* why_not) {
  dlerror();
  void* symbol = dlsym(library, name);
  if (symbol == nullptr) {
    if (why_not) *why_not = fmt::format("the NVIDIA driver's NVML library has no {} (driver too old?)", name);
    return false;
  }
  function = reinterpret_cast<Function>(symbol);
  return true;
}

}  // namespace

NvmlSession::~NvmlSession() { close(); }

NvmlSession::NvmlSession(NvmlSession&& other) noexcept
    : api_(other.api_),
      library_(std::exchange(other.library_, nullptr)),
      open_(std::exchange(other.open_, false)),
      device_count_(std::exchange(other.device_count_, 0)) {}

NvmlSession& NvmlSession::operator=(NvmlSession&& other) noexcept {
  if (this != &other) {
    close();
    api_ = other.api_;
    library_ = std::exchange(other.library_, nullptr);
    open_ = std::exchange(other.open_, false);
    device_count_ = std::exchange(other.device_count_, 0);
  }
  return *this;
}

NvmlSession NvmlSession::open(const std::string& library, std::string* why_not) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    if (why_not) {
      *why_not = fmt::format("cannot load {} ({}); is the NVIDIA driver installed?", library,
                             error ? error : "unknown dlopen error");
    }
    return {};
  }
  NvmlApi api;
  const bool resolved = resolve(handle, "nvmlInit_v2", api.init, why_not) &&
                        resolve(handle, "nvmlShutdown", api.shutdown, why_not) &&
                        resolve(handle, "nvmlDeviceGetCount_v2", api.device_count, why_not) &&
                        resolve(handle, "nvmlDeviceGetHandleByIndex_v2", api.device_handle, why_not) &&
                        resolve(handle, "nvmlDeviceGetUtilizationRates", api.utilization, why_not) &&
                        resolve(handle, "nvmlDeviceGetMemoryInfo", api.memory, why_not) &&
                        resolve(handle, "nvmlErrorString", api.error_string, why_not);
  if (!resolved) {
    dlclose(handle);
    return {};
  }
  NvmlSession session = open(api, why_not);
  if (!session.open_) {
    dlclose(handle);
    return {};
  }
  session.library_ = handle;
  return session;
}

NvmlSession NvmlSession::open(const NvmlApi& api, std::string* why_not) {
  NvmlSession session;
  session.api_ = api;
  const NvmlApi::Return init = api.init();
  if (init != NvmlApi::kSuccess) {
    if (why_not) *why_not = "nvmlInit failed: " + session.error_text(init);
    return {};
  }
  unsigned int count = 0;
  const NvmlApi::Return counted = api.device_count(&count);
  if (counted != NvmlApi::kSuccess) {
    if (why_not) *why_not = "nvmlDeviceGetCount failed: " + session.error_text(counted);
    api.shutdown();
    return {};
  }
  session.open_ = true;
  session.device_count_ = count;
  return session;
}

std::optional<GpuReading> NvmlSession::read(unsigned int index, std::string* why_not) const {
  if (!open_ || index >= device_count_) {
    if (why_not) *why_not = fmt::format("GPU {} is not among the {} devices NVML sees", index, device_count_);
    return std::nullopt;
  }
  NvmlApi::Device device = nullptr;
  NvmlApi::Utilization utilization{};
  NvmlApi::Memory memory{};
  NvmlApi::Return rc = api_.device_handle(index, &device);
  const char* call = "nvmlDeviceGetHandleByIndex";
  if (rc == NvmlApi::kSuccess) {
    rc = api_.utilization(device, &utilization);
    call = "nvmlDeviceGetUtilizationRates";
  }
  if (rc == NvmlApi::kSuccess) {
    rc = api_.memory(device, &memory);
    call = "nvmlDeviceGetMemoryInfo";
  }
  if (rc != NvmlApi::kSuccess) {
    if (why_not) *why_not = fmt::format("{} failed for GPU {}: {}", call, index, error_text(rc));
    return std::nullopt;
  }
  return GpuReading{.utilization_percent = static_cast<double>(utilization.gpu),
                    .memory_used_mb = static_cast<double>(memory.used) / (1024.0 * 1024.0)};
}

void NvmlSession::close() {
  if (open_) api_.shutdown();
  open_ = false;
  device_count_ = 0;
  if (library_ != nullptr) dlclose(library_);
  library_ = nullptr;
}

std::string NvmlSession::error_text(NvmlApi::Return code) const {
  const char* text = api_.error_string ? api_.error_string(code) : nullptr;
  return fmt::format("{} (NVML error {})", text ? text : "unknown error", code);
}

bool report_gpu_unavailable(std::string_view reason) {
  static std::atomic<bool> reported{false};
  if (reported.exchange(true)) return false;
  std::fprintf(stderr, "ddpscope: warning: GPU metrics are unavailable: %.*s\n", static_cast<int>(reason.size()),
               reason.data());
  std::fflush(stderr);
  return true;
}

}  // namespace ddp
