#include "ddpscope/world_join.h"

#include <cstddef>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "dist/launcher.h"
#include "dist/mpi_communicator.h"
#include "dist/world.h"

namespace ddp {
namespace {

// The command line of this process, to re-launch it under mpirun. A bundle's wrapper
// (bench/gpu/pack.sh) starts the program through the dynamic loader, whose path and options
// come first in /proc/self/cmdline: DDPSCOPE_LOADER_WORDS says how many words to drop.
std::vector<std::string> own_command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  for (std::string arg; std::getline(in, arg, '\0');) args.push_back(arg);
  const char* loader_words = std::getenv("DDPSCOPE_LOADER_WORDS");
  const std::size_t drop = loader_words != nullptr ? std::strtoul(loader_words, nullptr, 10) : 0;
  if (drop > 0 && drop < args.size()) args.erase(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(drop));
  return args;
}

// FNV-1a over the resolved options: ranks started with different options must not train.
uint64_t config_hash(const Hparams& hparams, const TrainerOptions& t) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](std::string_view text) {
    for (unsigned char ch : text) h = (h ^ ch) * 0x100000001b3ull;
    h = (h ^ 0xff) * 0x100000001b3ull;
  };
  for (const auto& [key, value] : hparams) {
    mix(key);
    mix(value);
  }
  for (const auto& field :
       {std::to_string(t.max_epochs), std::to_string(t.max_steps), std::to_string(t.accumulate_grad_batches),
        std::to_string(t.seed), std::string(spelling(t.strategy))}) {
    mix(field);
  }
  return h;
}

}  // namespace

std::optional<int> run_ranks_if_launcher(const TrainerOptions& options, bool verbose) {
  if (options.devices <= 1 || launched_by_mpi()) return std::nullopt;
  std::vector<std::string> args = own_command_line();
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  return relaunch_under_mpirun(static_cast<int>(args.size()), argv.data(),
                               {options.devices, options.threads_per_device, verbose});
}

World join_world(const TrainerOptions& options, const Hparams& hparams) {
  if (!launched_by_mpi() || options.strategy == Strategy::kSingle) return World::alone();
  Communicator& comm = mpi_world();
  check_world(comm, options.devices, options.num_nodes);
  check_same_config(comm, config_hash(hparams, options));
  return World(comm);
}

}  // namespace ddp
