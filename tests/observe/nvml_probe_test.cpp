#include "observe/nvml_probe.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "observe/device_monitor.h"

namespace ddp {
namespace {

// A fake driver: two GPUs; device 1 is 37 % busy with 1.5 GiB used. Each test sets the
// failures it wants and counts the calls.
struct FakeDriver {
  int init_result = 0;
  int count_result = 0;
  int utilization_result = 0;
  int init_calls = 0;
  int shutdown_calls = 0;
};
FakeDriver fake;
int fake_devices[2];

NvmlApi fake_api() {
  fake = FakeDriver{};
  NvmlApi api;
  api.init = [] {
    ++fake.init_calls;
    return fake.init_result;
  };
  api.shutdown = [] {
    ++fake.shutdown_calls;
    return 0;
  };
  api.device_count = [](unsigned int* count) {
    *count = 2;
    return fake.count_result;
  };
  api.device_handle = [](unsigned int index, NvmlApi::Device* device) {
    *device = &fake_devices[index];
    return 0;
  };
  api.device_by_bus_id = [](const char* bus_id, NvmlApi::Device* device) {
    if (std::string(bus_id) != "0000:3b:00.0") return 6;  // NVML_ERROR_NOT_FOUND
    *device = &fake_devices[1];
    return 0;
  };
  api.device_index = [](NvmlApi::Device device, unsigned int* index) {
    *index = static_cast<unsigned int>(static_cast<int*>(device) - fake_devices);
    return 0;
  };
  api.utilization = [](NvmlApi::Device device, NvmlApi::Utilization* utilization) {
    *utilization = {.gpu = device == &fake_devices[1] ? 37u : 0u, .memory = 5};
    return fake.utilization_result;
  };
  api.memory = [](NvmlApi::Device device, NvmlApi::Memory* memory) {
    const unsigned long long used = device == &fake_devices[1] ? 1536ull << 20 : 0;
    *memory = {.total = 80ull << 30, .free = (80ull << 30) - used, .used = used};
    return 0;
  };
  api.error_string = [](NvmlApi::Return code) { return code == 9 ? "Driver Not Loaded" : "Unknown Error"; };
  return api;
}

TEST(NvmlSessionTest, ReadsUtilizationAndMemoryThroughTheApi) {
  std::string why_not;
  {
    NvmlSession nvml = NvmlSession::open(fake_api(), &why_not);
    ASSERT_TRUE(nvml.is_open()) << why_not;
    EXPECT_EQ(nvml.device_count(), 2u);
    const auto gpu = nvml.read(1);
    ASSERT_TRUE(gpu.has_value());
    EXPECT_DOUBLE_EQ(gpu->utilization_percent, 37.0);
    EXPECT_DOUBLE_EQ(gpu->memory_used_mb, 1536.0);
    EXPECT_FALSE(nvml.read(2, &why_not).has_value());
    EXPECT_EQ(why_not, "GPU 2 is not among the 2 devices NVML sees");

    NvmlSession moved = std::move(nvml);
    EXPECT_FALSE(nvml.is_open());
    EXPECT_TRUE(moved.is_open());
    EXPECT_EQ(fake.shutdown_calls, 0);
  }
  EXPECT_EQ(fake.init_calls, 1);
  EXPECT_EQ(fake.shutdown_calls, 1);  // once, by the moved-to session
}

TEST(NvmlSessionTest, CloseShutsDownOnce) {
  std::string why_not;
  NvmlSession nvml = NvmlSession::open(fake_api(), &why_not);
  nvml.close();
  nvml.close();
  EXPECT_FALSE(nvml.is_open());
  EXPECT_EQ(fake.shutdown_calls, 1);
  EXPECT_FALSE(nvml.read(0).has_value());
}

TEST(NvmlSessionTest, InitFailureSaysWhatNvmlSaid) {
  NvmlApi api = fake_api();
  fake.init_result = 9;
  std::string why_not;
  NvmlSession nvml = NvmlSession::open(api, &why_not);
  EXPECT_FALSE(nvml.is_open());
  EXPECT_EQ(why_not, "nvmlInit failed: Driver Not Loaded (NVML error 9)");
  EXPECT_EQ(fake.shutdown_calls, 0);  // nothing to shut down after a failed init
}

TEST(NvmlSessionTest, CountFailureShutsDownWhatInitOpened) {
  NvmlApi api = fake_api();
  fake.count_result = 999;
  std::string why_not;
  EXPECT_FALSE(NvmlSession::open(api, &why_not).is_open());
  EXPECT_EQ(why_not, "nvmlDeviceGetCount failed: Unknown Error (NVML error 999)");
  EXPECT_EQ(fake.shutdown_calls, 1);
}

TEST(NvmlSessionTest, ReadFailureNamesTheCall) {
  std::string why_not;
  NvmlSession nvml = NvmlSession::open(fake_api(), &why_not);
  fake.utilization_result = 3;
  EXPECT_FALSE(nvml.read(0, &why_not).has_value());
  EXPECT_EQ(why_not, "nvmlDeviceGetUtilizationRates failed for GPU 0: Unknown Error (NVML error 3)");
}

TEST(NvmlSessionTest, FindsAGpusIndexByItsPciBusId) {
  NvmlSession nvml = NvmlSession::open(fake_api(), nullptr);
  EXPECT_EQ(nvml.index_of("0000:3b:00.0"), 1u);
  EXPECT_EQ(nvml.index_of("0000:ff:00.0"), std::nullopt);
  nvml.close();
  EXPECT_EQ(nvml.index_of("0000:3b:00.0"), std::nullopt) << "a closed session knows no GPU";
}

TEST(NvmlSessionTest, AbsentLibraryIsAReasonNotACrash) {
  std::string why_not;
  NvmlSession nvml = NvmlSession::open("/nonexistent/libnvidia-ml.so.1", &why_not);
  EXPECT_FALSE(nvml.is_open());
  EXPECT_EQ(nvml.device_count(), 0u);
  EXPECT_NE(why_not.find("cannot load /nonexistent/libnvidia-ml.so.1 ("), std::string::npos) << why_not;
  EXPECT_NE(why_not.find("No such file"), std::string::npos) << why_not;
}

TEST(NvmlSessionTest, ALibraryWithoutNvmlIsRejected) {
  std::string why_not;
  NvmlSession nvml = NvmlSession::open("libc.so.6", &why_not);
  EXPECT_FALSE(nvml.is_open());
  EXPECT_EQ(why_not, "the NVIDIA driver's NVML library has no nvmlInit_v2 (driver too old?)");
}

TEST(NvmlSessionTest, TheDriversLibraryOpensOrSaysWhy) {
  // No GPU here: the absent path. On a GPU machine: the real driver.
  std::string why_not;
  NvmlSession nvml = NvmlSession::open(kNvmlLibrary, &why_not);
  if (nvml.is_open()) {
    for (unsigned int i = 0; i < nvml.device_count(); ++i) {
      const auto gpu = nvml.read(i, &why_not);
      ASSERT_TRUE(gpu.has_value()) << why_not;
      EXPECT_GE(gpu->utilization_percent, 0.0);
      EXPECT_LE(gpu->utilization_percent, 100.0);
      EXPECT_GE(gpu->memory_used_mb, 0.0);
    }
    nvml.close();
    // Kept loaded for the next session, as pynvml keeps it: a session costs NVML's start alone.
    EXPECT_NE(dlopen(kNvmlLibrary, RTLD_NOW | RTLD_NOLOAD), nullptr);
  } else {
    EXPECT_FALSE(why_not.empty());
  }
}

// The only test in this binary that reaches report_gpu_unavailable(): it prints once per
// process, and that is what this checks.
TEST(GpuUnavailableTest, MonitorAndProbeSayItOnceAndGoOn) {
  const MonitorOptions options{.interval_ms = 10, .gpu = true, .nvml_library = "/nonexistent/libnvidia-ml.so.1"};
  testing::internal::CaptureStderr();
  DeviceMonitor monitor(options);
  monitor.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  monitor.stop();
  PerStepProbe probe(options);
  for (int i = 0; i < 5; ++i) {
    const DeviceSample sample = probe.probe_once();
    EXPECT_EQ(sample.gpu_percent, -1);
    EXPECT_EQ(sample.gpu_memory_mb, -1);
  }
  const std::string err = testing::internal::GetCapturedStderr();

  const std::string message =
      "ddpscope: warning: GPU metrics are unavailable: cannot load /nonexistent/libnvidia-ml.so.1";
  const std::size_t first = err.find(message);
  ASSERT_NE(first, std::string::npos) << err;
  EXPECT_EQ(err.find("GPU metrics are unavailable", first + message.size()), std::string::npos) << err;
  EXPECT_FALSE(report_gpu_unavailable("again"));

  const auto samples = monitor.samples();
  EXPECT_GE(samples.size(), 2u);
  for (const DeviceSample& sample : samples) {
    EXPECT_EQ(sample.gpu_percent, -1);
    EXPECT_EQ(sample.gpu_memory_mb, -1);
    EXPECT_EQ(sample.utilization(), sample.process_cpu_percent);  // a CPU rank's: its own threads'
  }
}

}  // namespace
}  // namespace ddp
