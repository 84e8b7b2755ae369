#include "cli.h"

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <map>
#include <optional>

#include "analyze_command.h"
#include "base/stop_signal.h"
#include "ddpscope/error.h"
#include "ddpscope/trainer.h"
#include "ddpscope/world_join.h"
#include "devices_command.h"
#include "dist/launcher.h"
#include "dist/mpi_communicator.h"
#include "doctor_command.h"
#include "predict_command.h"
#include "run_options.h"
#include "train/config/options.h"
#include "train/config/run_config.h"
#include "train/loop/regression_task.h"

namespace ddp {
namespace {

int run_train(const CLI::App& command, const RunOptions& run, bool overwrite) {
  Config config = resolve_config(given_options(command, run), run.preset, run.config_file);
  validate_config(config);
  config.trainer.overwrite = overwrite;
  if (config.trainer.strategy == Strategy::kSingle && launched_by_mpi() && launcher_world_size() > 1) {
    throw UsageError(
        fmt::format("--strategy single trains on one device, but mpirun started {} ranks; use "
                    "--strategy ddp (or auto)",
                    launcher_world_size()));
  }
  // One process per device, as Lightning's DDP launcher re-runs the script: this process
  // only launches and supervises them.
  if (const std::optional<int> job = run_ranks_if_launcher(config.trainer, run.verbose)) return *job;

  // Taken from here until the process has exited: a signal during the last step, the
  // summary or MPI's finalisation is taken like any other, never the default action that
  // would kill a rank the others wait for.
  StopSignals::hold_until_exit();
  RegressionDataModule data(config);
  // What hparams.yaml and the summary record is what trains: a CSV file's rows.
  if (const std::optional<int64_t> rows = data.file_rows()) config.data.dataset_size = *rows;
  RegressionModel model(config);
  // The seed's timer starts before the Trainer; a rank that ddpscope launched under mpirun
  // counts from the launch, so the time includes starting the job.
  const auto start = job_start_time();
  const OptionTexts hparams = resolved_options(config);
  Trainer trainer(config.trainer, join_world(config.trainer, hparams), hparams);
  trainer.fit(model, data);
  if (trainer.is_global_zero() && !trainer.nothing_left_to_train()) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("Logs and summary: %s\n", trainer.log_dir().c_str());
    std::printf("Training completed in %.2f seconds\n", seconds);
  }
  return 0;
}

// CLI11's messages say what its parser expected ("A subcommand is required", "--lr: 1
// required  missing"); these say what the user did.
std::string in_user_words(const CLI::App& app, const CLI::ParseError& e, int argc, char** argv) {
  const std::string what = e.what();
  if (e.get_name() == "RequiredError" && what.starts_with("A subcommand")) {
    std::vector<std::string> commands;
    for (const CLI::App* sub : app.get_subcommands({})) {
      if (!sub->get_group().empty()) commands.push_back(sub->get_name());
    }
    const std::string expected = fmt::format("one of {}", fmt::join(commands, ", "));
    if (argc < 2) return "no command given; expected " + expected;
    return fmt::format("'{}' is not a command; expected {}", argv[1], expected);
  }
  const std::size_t colon = what.find(": ");
  if (e.get_name() == "ArgumentMismatch" && what.ends_with("missing") && colon != std::string::npos) {
    const std::string option = what.substr(0, colon);
    return fmt::format("{} needs a value: {} VALUE", option, option);
  }
  // A subcommand's ExtrasError carries the subcommand's name, not its own: known by its type.
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr && colon != std::string::npos && argc >= 2) {
    const std::string extra = what.substr(colon + 2);
    if (extra.starts_with("-") && extra.find(' ') == std::string::npos) {
      return fmt::format("{} is not an option of {}; a path that begins with '-' is written ./{} (ddpscope {} ./{})",
                         extra, argv[1], extra, argv[1], extra);
    }
  }
  return what;
}

// The help to point at: the command's own where one was given.
std::string help_hint(const CLI::App& app, int argc, char** argv) {
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (argc >= 2 && sub->get_name() == argv[1] && !sub->get_group().empty()) {
      return fmt::format("run 'ddpscope {} --help'", argv[1]);
    }
  }
  return "run 'ddpscope --help'";
}

}  // namespace

// `doctor -- COMMAND` and `analyze -- COMMAND`: the user's own command is every word after the
// first --, which CLI11 then never sees (its options are the command's, not ours).
std::vector<std::string> user_command(int& argc, char** argv) {
  if (argc < 2 || (std::string_view(argv[1]) != "doctor" && std::string_view(argv[1]) != "analyze")) return {};
  for (int i = 2; i < argc; ++i) {
    if (std::string_view(argv[i]) != "--") continue;
    std::vector<std::string> command(argv + i + 1, argv + argc);
    if (command.empty() || command.front().empty()) {
      throw UsageError(fmt::format("-- needs the command to run after it (ddpscope {} -- python train.py)", argv[1]));
    }
    argc = i;
    return command;
  }
  return {};
}

int run_cli(int argc, char** argv) {
  const int typed = argc;  // every word, for the commands that reproduce this one
  const std::vector<std::string> command = user_command(argc, argv);
  CLI::App app{"ddpscope: a data-parallel MLP trainer and scaling doctor", "ddpscope"};
  app.set_version_flag("--version", std::string("ddpscope ") + DDPSCOPE_VERSION);
  app.require_subcommand(1);

  RunOptions train_options;
  CLI::App* train = app.add_subcommand("train", "one training run (the seed's script)");
  add_run_options(*train, train_options);
  bool train_overwrite = false;
  train->add_flag("--overwrite", train_overwrite, "replace an existing --version folder")->group("observability");
  DoctorCommands doctor_commands;
  doctor_commands.user_command = command;
  add_doctor_commands(app, doctor_commands);
  add_predict_command(app);
  add_devices_command(app);
  add_analyze_command(app, typed, argv, command);

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);  // --help, --version
  } catch (const CLI::ParseError& e) {
    throw UsageError(fmt::format("{}; {}", in_user_words(app, e, argc, argv), help_hint(app, argc, argv)));
  }
  if (train->parsed()) return run_train(*train, train_options, train_overwrite);
  return run_doctor_commands(doctor_commands, typed, argv);
}

}  // namespace ddp
