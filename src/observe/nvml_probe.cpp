#include "observe/nvml_probe.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
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

// A library's functions, or why it cannot give them.
struct LoadedApi {
  NvmlApi api;
  std::string why_not;
};

LoadedApi load(const std::string& library) {
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    return {{},
            fmt::format("cannot load {} ({}); is the NVIDIA driver installed?", library,
                        error ? error : "unknown dlopen error")};
  }
  LoadedApi loaded;
  NvmlApi& api = loaded.api;
  const bool resolved = resolve(handle, "nvmlInit_v2", api.init, &loaded.why_not) &&
                        resolve(handle, "nvmlShutdown", api.shutdown, &loaded.why_not) &&
                        resolve(handle, "nvmlDeviceGetCount_v2", api.device_count, &loaded.why_not) &&
                        resolve(handle, "nvmlDeviceGetHandleByIndex_v2", api.device_handle, &loaded.why_not) &&
                        resolve(handle, "nvmlDeviceGetHandleByPciBusId_v2", api.device_by_bus_id, &loaded.why_not) &&
                        resolve(handle, "nvmlDeviceGetIndex", api.device_index, &loaded.why_not) &&
                        resolve(handle, "nvmlDeviceGetUtilizationRates", api.utilization, &loaded.why_not) &&
                        resolve(handle, "nvmlDeviceGetMemoryInfo", api.memory, &loaded.why_not) &&
                        resolve(handle, "nvmlErrorString", api.error_string, &loaded.why_not);
  if (!resolved) {
    dlclose(handle);
    return {{}, loaded.why_not};
  }
  return loaded;  // the handle is kept for the process
}

// A library that loads is loaded once per process and kept; one that does not is tried again
// by the next session, as pynvml tries again while it has no library.
LoadedApi loaded_api(const std::string& library) {
  static std::mutex mutex;
  static std::map<std::string, NvmlApi> loaded;
  std::lock_guard lock(mutex);
  if (const auto found = loaded.find(library); found != loaded.end()) return {found->second, ""};
  LoadedApi fresh = load(library);
  if (fresh.why_not.empty()) loaded.emplace(library, fresh.api);
  return fresh;
}

}  // namespace

NvmlSession::~NvmlSession() { close(); }

NvmlSession::NvmlSession(NvmlSession&& other) noexcept
    : api_(other.api_),
      open_(std::exchange(other.open_, false)),
      device_count_(std::exchange(other.device_count_, 0)) {}

NvmlSession& NvmlSession::operator=(NvmlSession&& other) noexcept {
  if (this != &other) {
    close();
    api_ = other.api_;
    open_ = std::exchange(other.open_, false);
    device_count_ = std::exchange(other.device_count_, 0);
  }
  return *this;
}

NvmlSession NvmlSession::open(const std::string& library, std::string* why_not) {
  const LoadedApi loaded = loaded_api(library);
  if (!loaded.why_not.empty()) {
    if (why_not) *why_not = loaded.why_not;
    return {};
  }
  return open(loaded.api, why_not);
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

std::optional<unsigned int> NvmlSession::index_of(const std::string& pci_bus_id) const {
  NvmlApi::Device device = nullptr;
  unsigned int index = 0;
  if (!open_ || api_.device_by_bus_id == nullptr || api_.device_index == nullptr ||
      api_.device_by_bus_id(pci_bus_id.c_str(), &device) != NvmlApi::kSuccess ||
      api_.device_index(device, &index) != NvmlApi::kSuccess) {
    return std::nullopt;
  }
  return index;
}

void NvmlSession::close() {
  if (open_) api_.shutdown();
  open_ = false;
  device_count_ = 0;
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
