#include "ddpscope/world_join.h"

#include <fmt/format.h>

#include <cstddef>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "ddpscope/error.h"
#include "dist/communicator.h"
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

// The resolved options, and the Trainer's own where a library user's hparams lack them:
// ranks started with different options must not train.
OptionTexts options_to_compare(const OptionTexts& hparams, const TrainerOptions& t) {
  OptionTexts out = hparams;
  out.insert(out.end(), {{"trainer.max_epochs", std::to_string(t.max_epochs)},
                         {"trainer.max_steps", std::to_string(t.max_steps)},
                         {"trainer.accumulate_grad_batches", std::to_string(t.accumulate_grad_batches)},
                         {"trainer.seed", std::to_string(t.seed)},
                         {"trainer.strategy", std::string(spelling(t.strategy))}});
  return out;
}

}  // namespace

World World::alone() { return World(make_local_communicator()); }
World::World(Communicator& shared) : comm_(&shared) {}
World::World(std::unique_ptr<Communicator> owned) : comm_(owned.get()), owned_(std::move(owned)) {}
World::World(World&&) noexcept = default;
World& World::operator=(World&&) noexcept = default;
World::~World() = default;

std::optional<int> run_ranks_if_launcher(const TrainerOptions& options, bool verbose) {
  if (options.devices <= 1 || launched_by_mpi()) return std::nullopt;
  std::vector<std::string> args = own_command_line();
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  return relaunch_under_mpirun(static_cast<int>(args.size()), argv.data(),
                               {options.devices, options.threads_per_device, verbose});
}

World join_world(const TrainerOptions& options, const OptionTexts& hparams) {
  if (!launched_by_mpi() || options.strategy == Strategy::kSingle) {
    // One process on one machine: a run that recorded more nodes would misreport itself.
    if (options.num_nodes > 1) {
      throw UsageError(fmt::format("--num-nodes {} but this job's 1 rank(s) run on 1 host(s); set --num-nodes 1",
                                   options.num_nodes));
    }
    return World::alone();
  }
  Communicator& comm = mpi_world();
  check_world(comm, options.devices, options.num_nodes);
  check_same_config(comm, options_to_compare(hparams, options));
  return World(comm);
}

}  // namespace ddp
