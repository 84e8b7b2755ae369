#pragma once
// `ddpscope compare`, `ddpscope doctor`, and the allreduce probe they run under mpirun.
#include <CLI/CLI.hpp>

#include <string>

#include "run_options.h"

namespace ddp {

struct DoctorCommands {
  CLI::App* compare = nullptr;
  CLI::App* doctor = nullptr;
  CLI::App* probe = nullptr;
  RunOptions compare_options;
  RunOptions doctor_options;
  std::string compare_devices;
  std::string doctor_devices;
  std::string doctor_repeats = "1";
  bool compare_overwrite = false;
  bool doctor_overwrite = false;
  int probe_devices = 1;
  std::string probe_sizes;
  std::string trace_steps = "10";
  std::vector<std::string> user_command;  // doctor -- COMMAND: the user's own, as typed
};

void add_doctor_commands(CLI::App& app, DoctorCommands& commands);

// Runs whichever of them was parsed; 0 when none was.
int run_doctor_commands(DoctorCommands& commands, int argc, char** argv);

}  // namespace ddp
