#pragma once
// `ddpscope devices [--json]`: this build's GPU support (CUDA or not, its version and
// architectures) and each GPU this process sees, or why it sees none. Exits 0 either way:
// scripts (bench/gpu's check) read --json to learn what a machine can run.
namespace CLI {
class App;
}

namespace ddp {

// Adds the `devices` subcommand; its callback prints to stdout once app.parse() read it.
void add_devices_command(CLI::App& app);

}  // namespace ddp
