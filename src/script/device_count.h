#pragma once
// How a user's own command is made to run on N devices: said out loud, in one of three ways.
// `{devices}` in the command is replaced (any launcher: torchrun, srun -n, mpirun -np);
// torchrun's (or python -m torch.distributed.run's) --nproc-per-node is rewritten; else the
// start-up hook overrides a Lightning Trainer's devices where it is constructed, and refuses a
// script that builds none (python_hook.h).
#include <string>
#include <vector>

namespace ddp {

enum class DeviceControl { kPlaceholder, kTorchrun, kLightning };

struct CommandAtDevices {
  std::vector<std::string> args;
  DeviceControl control = DeviceControl::kLightning;
  std::string asked;   // torchrun: what the command asked (--nproc-per-node's value, "1" when absent)
  std::string option;  // torchrun: the option as the command spells it (--nproc-per-node or --nproc_per_node)
};

// `command` as typed after --, at `devices`.
CommandAtDevices command_at_devices(const std::vector<std::string>& command, int devices);

// Whether the command names {devices} (analyze runs a command as it is: it has no count to give).
bool has_devices_placeholder(const std::vector<std::string>& command);

// The three ways, for the message that refuses a command whose devices cannot be set.
std::string device_control_ways();

}  // namespace ddp
