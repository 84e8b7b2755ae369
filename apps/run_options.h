#pragma once
// The options of a run on a CLI11 subcommand. Values stay text here; the option table
// (src/train/config/options.h) parses and validates them, so the command line and YAML files
// share one parser.
#include <CLI/CLI.hpp>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ddpscope/config.h"

namespace ddp {

struct RunOptions {
  std::string preset;
  std::string config_file;
  bool verbose = false;                       // Open MPI's own messages too (not a training option: not in hparams)
  std::map<CLI::Option*, std::string> names;  // option -> table name ("no-shuffle" for negations)
};

// skip: table options this subcommand declares itself (compare's list-valued --devices).
void add_run_options(CLI::App& command, RunOptions& run, const std::vector<std::string>& skip = {});

// (name, value) in the order the user typed them, so the last one given wins.
OptionTexts given_options(const CLI::App& command, const RunOptions& run);

}  // namespace ddp
