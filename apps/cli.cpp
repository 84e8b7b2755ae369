#include "cli.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <map>

#include "base/error.h"
#include "dist/launcher.h"
#include "train/options.h"
#include "train/regression_task.h"
#include "train/trainer.h"

namespace ddp {
namespace {

// The options of DESIGN §1 on a subcommand. Values stay text here; the option table
// parses and validates them, so the command line and YAML files share one parser.
struct RunOptions {
  std::string preset;
  std::string config_file;
  std::map<CLI::Option*, std::string> names;  // option -> table name ("no-shuffle" for negations)
};

void add_run_options(CLI::App& command, RunOptions& run) {
  command.add_option("--preset", run.preset, "a named configuration: seed (the seed's Trainer)")->group("presets");
  command.add_option("--config", run.config_file, "YAML file of options (names without dashes)")->group("presets");
  for (const OptionSpec& spec : option_specs()) {
    CLI::Option* option = spec.is_flag ? command.add_flag("--" + spec.name)->description(spec.help)
                                       : command.add_option("--" + spec.name, spec.help)->type_size(1);
    option->group(spec.group);
    if (!spec.is_flag) option->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    run.names[option] = spec.name;
    if (!spec.negation.empty()) {
      CLI::Option* negation = command.add_flag("--" + spec.negation)->description("turn --" + spec.name + " off");
      negation->group(spec.group);
      run.names[negation] = spec.negation;
    }
  }
}

// (name, value) in the order the user typed them, so the last one given wins.
std::vector<std::pair<std::string, std::string>> typed_options(const CLI::App& command, const RunOptions& run) {
  std::vector<std::pair<std::string, std::string>> out;
  std::map<const CLI::Option*, std::size_t> seen;
  for (CLI::Option* option : command.parse_order()) {
    const auto name = run.names.find(option);
    if (name == run.names.end()) continue;
    const std::size_t occurrence = seen[option]++;
    if (option->get_type_size() == 0) {
      out.emplace_back(name->second, "true");
    } else {
      const CLI::results_t& results = option->results();
      out.emplace_back(name->second, occurrence < results.size() ? results[occurrence] : results.back());
    }
  }
  return out;
}

int run_train(const CLI::App& command, const RunOptions& run) {
  const Config config = resolve_config(typed_options(command, run), run.preset, run.config_file);
  validate_config(config);

  RegressionDataModule data(config);
  RegressionModel model(config);
  // The seed's timer starts before the Trainer; a rank that ddpscope launched under mpirun
  // counts from the launch, so the time includes starting the job.
  const auto start = job_start_time();
  Trainer trainer(config.trainer, resolved_options(config));
  trainer.fit(model, data);
  if (trainer.is_global_zero()) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("Logs and summary: %s\n", trainer.log_dir().c_str());
    std::printf("Training completed in %.2f seconds\n", seconds);
  }
  return 0;
}

}  // namespace

int run_cli(int argc, char** argv) {
  CLI::App app{"ddpscope: a data-parallel MLP trainer and scaling doctor", "ddpscope"};
  app.set_version_flag("--version", std::string("ddpscope ") + DDPSCOPE_VERSION);
  app.require_subcommand(1);

  RunOptions train_options;
  CLI::App* train = app.add_subcommand("train", "one training run (the seed's script)");
  add_run_options(*train, train_options);
  for (const char* later : {"compare", "doctor", "predict"}) {
    app.add_subcommand(later, fmt::format("({} arrives in a later version)", later))
        ->prefix_command()
        ->allow_extras();
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version
  } catch (const CLI::ParseError& e) {
    throw UsageError(fmt::format("{}; run 'ddpscope --help' or 'ddpscope train --help'", e.what()));
  }
  if (train->parsed()) return run_train(*train, train_options);
  for (CLI::App* sub : app.get_subcommands()) {
    throw UsageError(fmt::format("'ddpscope {}' is not available in this version yet; use 'ddpscope train'",
                                 sub->get_name()));
  }
  return 0;
}

}  // namespace ddp
