#include "doctor_command.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "ddpscope/error.h"
#include "dist/launcher.h"
#include "dist/mpi_communicator.h"
#include "dist/world.h"
#include "doctor/allreduce_probe.h"
#include "doctor/command_line.h"
#include "doctor/doctor.h"
#include "gpu/visible_gpus.h"
#include "log/run_dir.h"
#include "script/script_doctor.h"
#include "tensor/gemm.h"
#include "train/config/accelerator_check.h"
#include "train/config/options.h"
#include "train/config/parse_value.h"
#include "train/config/run_config.h"
#include "train/loop/regression_task.h"

namespace ddp {
namespace {

// --devices 1,2,3: increasing, distinct, each from 1 to what can run here.
std::vector<int> parse_device_list(const std::string& text) {
  const int limit = std::max(8, 4 * static_cast<int>(std::thread::hardware_concurrency()));
  return parse_count_list(
      "devices", text, limit,
      fmt::format("an increasing comma list of distinct device counts from 1 to {} (4 per core here), e.g. 1,2,3",
                  limit));
}

// Whether this doctor's runs train on a GPU: --accelerator cuda (or auto where a GPU trains
// this configuration). The accelerator is then written as what runs, for the runs and
// doctor.json. UsageError for cuda without a device, or with what the GPU engine lacks.
bool doctor_on_gpu(Config& config) {
  if (config.trainer.accelerator == Accelerator::kCpu) return false;
  TrainerOptions one = config.trainer;
  one.devices = 1;  // each run sets its own; the GPU doctor runs one
  const bool gpu = trains_on_gpu(one, gpu_makes_data(config.data.data));
  config.trainer.accelerator = gpu ? Accelerator::kCuda : Accelerator::kCpu;
  return gpu;
}

// What the runs with more ranks than GPUs measured: ranks sharing them (gpu_placement.h).
std::string shared_gpus_note(const std::vector<int>& devices, int gpus) {
  std::vector<std::string> shared;
  for (const int n : devices) {
    if (n > gpus) shared.push_back(std::to_string(n));
  }
  return fmt::format(
      "The runs of {} ranks shared this machine's {} GPU{} (ranks take them round-robin, and gradients travel "
      "through host memory over MPI, as NCCL takes one rank per GPU): they measure shared GPUs, not that many GPUs. "
      "The predictions on the nvlink and pcie presets are for a GPU per rank.",
      fmt::join(shared, ", "), gpus, gpus == 1 ? "" : "s");
}

// The most --repeats takes: each repeat is one more full baseline run at each ablated device count.
constexpr int64_t kMaxRepeats = 10;

int run(CLI::App& command, RunOptions& options, const std::string& devices_text, bool overwrite, bool ablations,
        int repeats, int argc, char** argv) {
  const bool devices_given = command.get_option("--devices")->count() > 0;
  Config config = resolve_config(given_options(command, options), options.preset, options.config_file);
  std::vector<std::string> notes;
  std::vector<int> devices;
  if (doctor_on_gpu(config)) {
    // N GPU ranks run as train runs them: a GPU each while there are enough, else sharing.
    devices = devices_given ? parse_device_list(devices_text) : std::vector<int>{1};
    const int gpus = static_cast<int>(visible_gpus().devices.size());
    if (devices.back() > gpus) notes.push_back(shared_gpus_note(devices, gpus));
    if (!devices_given && config.trainer.devices > 1) {
      notes.push_back(fmt::format(
          "The configuration asks for {} devices; {} ran 1 GPU (give --devices to run more, sharing the GPUs where "
          "there are fewer) and its model predicts {} GPUs on the link presets.",
          config.trainer.devices, command.get_name(), config.trainer.devices));
    }
  } else if (devices_given) {
    devices = parse_device_list(devices_text);
  } else {
    // The configuration's device count, as far as this machine has cores for: a preset's 3
    // devices become 2 on a 2-core machine, and the report says so.
    const int cores = static_cast<int>(std::thread::hardware_concurrency());
    const int wanted = config.trainer.devices > 1 ? config.trainer.devices : 2;
    const int most = std::max(1, std::min(wanted, cores));
    devices = most > 1 ? std::vector<int>{1, most} : std::vector<int>{1};
    if (most < wanted) {
      notes.push_back(
          fmt::format("The configuration asks for {} devices; this machine has {} cores, so {} compared "
                      "1 and {} devices (give --devices to choose).",
                      wanted, cores, command.get_name(), most));
    }
  }
  config.trainer.devices = 0;  // each run sets its own
  // Every mpirun this command starts (its runs' and the probe's) takes these, through the
  // environment its children inherit (src/dist/launcher.cpp).
  if (const CLI::Option* extra = command.get_option("--mpirun-args"); extra->count() > 0) {
    const std::string text = extra->as<std::string>();
    if (text.find_first_not_of(" \t") == std::string::npos) {
      reject_value("mpirun-args", text,
                   "mpirun options separated by spaces, e.g. \"$(scripts/local-cluster options)\"");
    }
    setenv("DDPSCOPE_MPIRUN_ARGS", text.c_str(), 1);
    notes.push_back(fmt::format("Every mpirun started here took: {}.", text));
  }
  if (config.preset == "seed" && ablations) {
    // The seed's script probes utilization inside every step: the baseline keeps that habit,
    // and an ablation measures what sampling in the background saves.
    config.trainer.monitor_mode = MonitorMode::kPerStep;
    notes.push_back(
        "The baseline keeps the seed's habit of probing device utilization inside every training step "
        "(--monitor-mode per-step); the ablation monitor-background measures its cost.");
  }
  if (config.preset == "seed") {
    notes.push_back(
        "The seed's model returns [B,1,1] against a [B,1] target, so PyTorch's MSELoss broadcasts to "
        "[B,B,1] and compares every prediction with every target (it warns about it): the loss is not "
        "the per-sample error. ddpscope uses matching shapes [B,1]; the cost per step is the same.");
  }
  validate_config(config);
  // The runs' data is read here first: a file that cannot train fails before any run starts,
  // and the counts are of its rows.
  if (const std::optional<int64_t> rows = RegressionDataModule(config).file_rows()) config.data.dataset_size = *rows;

  DoctorRequest request;
  request.config = config;
  request.devices = devices;
  request.ablations = ablations;
  request.repeats = repeats;
  request.dir = make_run_dir(config.trainer.default_root_dir, config.trainer.name, config.trainer.version, overwrite);
  request.notes = notes;
  std::vector<std::string> typed = {"ddpscope"};
  for (int i = 1; i < argc; ++i) typed.emplace_back(argv[i]);
  request.command = shell_command(typed);  // pasted into a shell, it runs what ran
  run_doctor(request, stdout);
  return 0;
}

// The most optimizer steps a run's trace may hold: each rank's trace grows with them.
constexpr int64_t kMostTraceSteps = 1000;

// The options doctor -- COMMAND takes from train's: where its folder goes, and --max-steps.
constexpr std::array kScriptOptions = {"max-steps", "default-root-dir", "name", "version"};

// doctor -- COMMAND: the user's own command at each device count (script/script_doctor.h).
int run_script(DoctorCommands& c, int argc, char** argv) {
  stop_idle_gemm_threads();  // the user's command trains, not this process: its trace reader has every core
  CLI::App& command = *c.doctor;
  const OptionTexts given = given_options(command, c.doctor_options);
  for (const auto& [name, value] : given) {
    if (std::find(kScriptOptions.begin(), kScriptOptions.end(), name) == kScriptOptions.end()) {
      throw UsageError(
          fmt::format("--{} configures ddpscope's own training, not your command; with -- COMMAND the "
                      "doctor takes --devices, --max-steps, --trace-steps, --default-root-dir, --name, "
                      "--version and --overwrite",
                      name));
    }
  }
  if (c.doctor_options.preset.size() > 0 || !c.doctor_options.config_file.empty() ||
      command.get_option("--repeats")->count() > 0 || command.get_option("--mpirun-args")->count() > 0) {
    throw UsageError(
        "--preset, --config, --repeats and --mpirun-args configure ddpscope's own runs, not your command; with -- "
        "COMMAND the doctor takes --devices, --max-steps, --trace-steps, --default-root-dir, --name, --version and "
        "--overwrite");
  }
  const Config config = resolve_config(given, "", "");
  ScriptRequest request;
  request.command = c.user_command;
  request.max_steps = std::max<int64_t>(0, config.trainer.max_steps);
  request.trace_steps = static_cast<int>(parse_int("trace-steps", c.trace_steps, 1, kMostTraceSteps));
  if (command.get_option("--devices")->count() > 0) {
    request.devices = parse_device_list(c.doctor_devices);
  } else {
    // 1 and every device the host has: its GPUs, else its cores.
    const int gpus = static_cast<int>(visible_gpus().devices.size());
    const int most = gpus > 0 ? gpus : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
    request.devices = most > 1 ? std::vector<int>{1, most} : std::vector<int>{1};
  }
  request.dir =
      make_run_dir(config.trainer.default_root_dir, config.trainer.name, config.trainer.version, c.doctor_overwrite);
  std::vector<std::string> typed = {"ddpscope"};
  for (int i = 1; i < argc; ++i) typed.emplace_back(argv[i]);
  request.ddpscope_command = shell_command(typed);
  return run_script_doctor(request, stdout);
}

int run_probe(DoctorCommands& c, int argc, char** argv) {
  if (c.probe_devices > 1 && !launched_by_mpi()) return relaunch_under_mpirun(argc, argv, {c.probe_devices});
  std::vector<int64_t> sizes;
  std::size_t start = 0;
  while (start <= c.probe_sizes.size()) {
    const std::size_t comma = std::min(c.probe_sizes.find(',', start), c.probe_sizes.size());
    sizes.push_back(parse_int("sizes", c.probe_sizes.substr(start, comma - start), 4, int64_t{1} << 30));
    start = comma + 1;
  }
  Communicator& comm = mpi_world();
  const std::vector<ProbePoint> points = probe_allreduce(comm, sizes);
  if (comm.rank() == 0) {
    nlohmann::json j = {{"points", nlohmann::json::array()}};
    for (const ProbePoint& p : points)
      j["points"].push_back({{"ranks", p.ranks}, {"bytes", p.bytes}, {"seconds", p.seconds}});
    std::printf("%s\n", j.dump(2).c_str());
  }
  return 0;
}

}  // namespace

void add_doctor_commands(CLI::App& app, DoctorCommands& c) {
  c.compare = app.add_subcommand("compare", "the same run at each device count, side by side (--devices 1,2,3)");
  add_run_options(*c.compare, c.compare_options, {"devices"});
  c.compare->add_option("--devices", c.compare_devices, "device counts to compare, e.g. 1,2,3")->group("trainer");
  c.compare->add_flag("--overwrite", c.compare_overwrite, "replace an existing --version folder");
  c.compare->add_option("--mpirun-args", "extra arguments for every mpirun it starts (a hostfile, transports)")
      ->group("trainer");

  c.doctor =
      app.add_subcommand("doctor", "compare + ablations of the seed's habits + a fitted scaling model + findings");
  add_run_options(*c.doctor, c.doctor_options, {"devices"});
  c.doctor->add_option("--devices", c.doctor_devices, "device counts to compare, e.g. 1,2")->group("trainer");
  c.doctor->add_flag("--overwrite", c.doctor_overwrite, "replace an existing --version folder");
  c.doctor
      ->add_option("--repeats", c.doctor_repeats,
                   fmt::format("run each ablation's baseline N times (1 to {}): its noise then comes from the repeats, "
                               "start-up included, instead of its epochs' spread",
                               kMaxRepeats))
      ->group("trainer");
  c.doctor->add_option("--mpirun-args", "extra arguments for every mpirun it starts (a hostfile, transports)")
      ->group("trainer");
  c.doctor
      ->add_option("--trace-steps", c.trace_steps,
                   fmt::format("with -- COMMAND: optimizer steps traced in each run, after a warm-up (1 to {})",
                               kMostTraceSteps))
      ->group("your command");
  c.doctor->footer(
      "ddpscope doctor [--devices 1,N] [--max-steps K] [--trace-steps S] -- COMMAND...: your own PyTorch or Lightning "
      "script, unmodified, at each device count ({devices} in COMMAND, torchrun's --nproc-per-node, or a Lightning "
      "Trainer's devices set), traced by a start-up hook and answered as the doctor answers for its own runs.");

  c.probe = app.add_subcommand("probe-allreduce", "time MPI allreduce at a few sizes (used by doctor)");
  c.probe->group("");  // internal: not listed in --help
  c.probe->add_option("--devices", c.probe_devices, "ranks")->check(CLI::Range(1, 4096));
  c.probe->add_option("--sizes", c.probe_sizes, "comma list of byte counts")->required();
}

int run_doctor_commands(DoctorCommands& c, int argc, char** argv) {
  if (c.compare->parsed())
    return run(*c.compare, c.compare_options, c.compare_devices, c.compare_overwrite, false, 1, argc, argv);
  if (c.doctor->parsed() && !c.user_command.empty()) return run_script(c, argc, argv);
  if (c.doctor->parsed()) {
    if (c.doctor->get_option("--trace-steps")->count() > 0) {
      throw UsageError("--trace-steps traces your own command: give it after --trace-steps S -- COMMAND...");
    }
    const auto repeats = static_cast<int>(parse_int("repeats", c.doctor_repeats, 1, kMaxRepeats));
    return run(*c.doctor, c.doctor_options, c.doctor_devices, c.doctor_overwrite, true, repeats, argc, argv);
  }
  if (c.probe->parsed()) return run_probe(c, argc, argv);
  return 0;
}

}  // namespace ddp
