#include "devices_command.h"

#include <fmt/format.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <memory>
#include <sstream>

#include "gpu/visible_gpus.h"

namespace ddp {
namespace {

nlohmann::json or_null(const std::string& text) {
  return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text);
}

std::vector<std::string> words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string word; in >> word;) out.push_back(word);
  return out;
}

void print_json(const GpuBuild& build, const VisibleGpus& gpus) {
  nlohmann::json j = {{"built_with_cuda", build.with_cuda},
                      {"cuda_version", or_null(build.cuda_version)},
                      {"architectures", words(build.architectures)},
                      {"cublaslt", or_null(build.cublaslt)},
                      {"nccl", or_null(build.nccl)},
                      {"driver_cuda_version", or_null(gpus.driver_cuda_version)},
                      {"gpus", nlohmann::json::array()},
                      {"no_gpu_reason", or_null(gpus.none_reason)}};
  for (const GpuDevice& d : gpus.devices) {
    j["gpus"].push_back({{"index", d.index},
                         {"name", d.name},
                         {"compute_capability", fmt::format("{}.{}", d.major, d.minor)},
                         {"memory_bytes", d.memory_bytes}});
  }
  fmt::print("{}\n", j.dump(2));
}

void print_text(const GpuBuild& build, const VisibleGpus& gpus) {
  if (build.with_cuda) {
    fmt::print("Built with CUDA {} for {}; a GPU run loads {}{}\n", build.cuda_version, build.architectures,
               build.cublaslt,
               build.nccl.empty() ? " (no NCCL in this build)" : fmt::format(", and {} for NCCL", build.nccl));
  } else {
    fmt::print("Built without CUDA\n");
  }
  if (!gpus.driver_cuda_version.empty()) fmt::print("NVIDIA driver supports CUDA {}\n", gpus.driver_cuda_version);
  for (const GpuDevice& d : gpus.devices) fmt::print("GPU {}: {}\n", d.index, describe_gpu(d));
  if (gpus.devices.empty()) fmt::print("No CUDA device: {}\n", gpus.none_reason);
}

}  // namespace

void add_devices_command(CLI::App& app) {
  auto json = std::make_shared<bool>(false);
  CLI::App* devices = app.add_subcommand("devices", "this build's GPU support and the GPUs it sees");
  devices->add_flag("--json", *json, "print them as one JSON object");
  devices->callback([json] {
    const GpuBuild build = gpu_build();
    const VisibleGpus gpus = visible_gpus();
    if (*json) {
      print_json(build, gpus);
    } else {
      print_text(build, gpus);
    }
  });
}

}  // namespace ddp
