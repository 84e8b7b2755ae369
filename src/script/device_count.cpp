#include "script/device_count.h"

#include <fmt/format.h>

#include <filesystem>

namespace ddp {
namespace {

constexpr std::string_view kPlaceholder = "{devices}";

bool is_python(const std::string& word) {
  const std::string name = std::filesystem::path(word).filename().string();
  return name.starts_with("python");
}

// Where the launcher's own arguments start: after torchrun, or after python -m torch.distributed.run.
std::size_t torchrun_arguments(const std::vector<std::string>& command) {
  if (command.empty()) return 0;
  if (std::filesystem::path(command[0]).filename() == "torchrun") return 1;
  if (command.size() >= 3 && is_python(command[0]) && command[1] == "-m" &&
      (command[2] == "torch.distributed.run" || command[2] == "torch.distributed.launch")) {
    return 3;
  }
  return 0;
}

// torchrun's options that take no value.
bool is_torchrun_flag(const std::string& word) {
  for (const char* flag : {"--standalone", "--no-python", "--no_python", "-m", "--module", "--run-path", "--run_path"})
    if (word == flag) return true;
  return false;
}

}  // namespace

bool has_devices_placeholder(const std::vector<std::string>& command) {
  for (const std::string& word : command)
    if (word.find(kPlaceholder) != std::string::npos) return true;
  return false;
}

CommandAtDevices command_at_devices(const std::vector<std::string>& command, int devices) {
  CommandAtDevices out;
  out.args = command;
  const std::string n = std::to_string(devices);
  if (has_devices_placeholder(command)) {
    out.control = DeviceControl::kPlaceholder;
    for (std::string& word : out.args) {
      for (std::size_t at = word.find(kPlaceholder); at != std::string::npos; at = word.find(kPlaceholder, at)) {
        word.replace(at, kPlaceholder.size(), n);
        at += n.size();
      }
    }
    return out;
  }
  if (const std::size_t first = torchrun_arguments(command); first > 0) {
    out.control = DeviceControl::kTorchrun;
    out.asked = "1";  // torchrun's default
    // Its own options come before the script: the first word that is neither an option nor an
    // option's value is the script, and what follows it is the script's.
    for (std::size_t i = first; i < out.args.size(); ++i) {
      std::string& word = out.args[i];
      if (!word.starts_with("-")) break;  // the script: torchrun was given no count
      for (const char* name : {"--nproc-per-node", "--nproc_per_node"}) {
        const std::string option(name);
        if (word == option && i + 1 < out.args.size()) {
          out.option = option;
          out.asked = out.args[i + 1];
          out.args[i + 1] = n;
          return out;
        }
        if (word.starts_with(option + "=")) {
          out.option = option;
          out.asked = word.substr(option.size() + 1);
          word = option + "=" + n;
          return out;
        }
      }
      if (word.find('=') == std::string::npos && !is_torchrun_flag(word)) ++i;  // its value
    }
    // The spelling every torchrun takes (torch 1.x knows only this one).
    out.option = "--nproc_per_node";
    out.args.insert(out.args.begin() + static_cast<std::ptrdiff_t>(first), {"--nproc_per_node", n});
    return out;
  }
  out.control = DeviceControl::kLightning;
  return out;
}

std::string device_control_ways() {
  return "name {devices} in the command (torchrun --nproc-per-node {devices} train.py, srun -n {devices} python "
         "train.py, mpirun -np {devices} python train.py), launch it with torchrun (its --nproc-per-node is "
         "rewritten), or build a Lightning Trainer in the script (its devices are overridden)";
}

}  // namespace ddp
