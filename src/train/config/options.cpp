#include "train/config/options.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include "ddpscope/error.h"
#include "train/config/parse_value.h"
#include "train/config/run_config.h"

namespace ddp {
namespace {

constexpr int64_t kNoMax = std::numeric_limits<int64_t>::max();

OptionSpec named(std::string name, std::string group, std::string help) {
  OptionSpec spec;
  spec.name = std::move(name);
  spec.group = std::move(group);
  spec.help = std::move(help);
  return spec;
}

// Builders for the table: `field` maps a Config to the member the option sets.
template <typename Field>
OptionSpec integer(std::string name, std::string group, std::string help, int64_t min, int64_t max, Field field) {
  OptionSpec spec = named(name, std::move(group), std::move(help));
  spec.set = [name, min, max, field](Config& c, const std::string& v) {
    field(c) = static_cast<std::remove_reference_t<decltype(field(c))>>(parse_int(name, v, min, max));
  };
  spec.get = [field](const Config& c) { return std::to_string(field(const_cast<Config&>(c))); };
  return spec;
}

// accepted says the range [min, max] in the user's words ("a number > 0" for min = the
// smallest positive double).
template <typename Field>
OptionSpec real(std::string name, std::string group, std::string help, double min, double max, std::string accepted,
                Field field) {
  OptionSpec spec = named(name, std::move(group), std::move(help));
  spec.set = [name, min, max, accepted, field](Config& c, const std::string& v) {
    const double x = parse_real(name, v);
    if (!(x >= min && x <= max)) reject_value(name, v, accepted);
    field(c) = x;
  };
  spec.get = [field](const Config& c) { return format_real(field(const_cast<Config&>(c))); };
  return spec;
}

template <typename Field>
OptionSpec text(std::string name, std::string group, std::string help, Field field) {
  OptionSpec spec = named(name, std::move(group), std::move(help));
  spec.set = [field](Config& c, const std::string& v) { field(c) = v; };
  spec.get = [field](const Config& c) { return field(const_cast<Config&>(c)); };
  return spec;
}

[[noreturn]] void reject_choice(const std::string& name, const std::string& v,
                                const std::vector<std::string_view>& list) {
  reject_value(name, v, "one of " + fmt::format("{}", fmt::join(list, ", ")));
}

// A text option with a fixed list of values.
template <typename Field>
OptionSpec text_choice(std::string name, std::string group, std::string help,
                       std::initializer_list<std::string_view> choices, Field field) {
  OptionSpec spec = named(name, std::move(group), std::move(help));
  std::vector<std::string_view> list(choices.begin(), choices.end());
  spec.set = [name, list, field](Config& c, const std::string& v) {
    if (std::find(list.begin(), list.end(), v) == list.end()) reject_choice(name, v, list);
    field(c) = v;
  };
  spec.get = [field](const Config& c) { return field(const_cast<Config&>(c)); };
  return spec;
}

// An enum option (option_enums.h): its spellings are the accepted values, in their order.
template <typename Field>
OptionSpec choice(std::string name, std::string group, std::string help, Field field) {
  using Enum = std::remove_reference_t<decltype(field(std::declval<Config&>()))>;
  OptionSpec spec = named(name, std::move(group), std::move(help));
  spec.set = [name, field](Config& c, const std::string& v) {
    const std::optional<Enum> value = from_spelling<Enum>(v);
    if (!value) {
      std::vector<std::string_view> list;
      for (const auto& s : spellings(Enum{})) list.push_back(s.text);
      reject_choice(name, v, list);
    }
    field(c) = *value;
  };
  spec.get = [field](const Config& c) { return std::string(spelling(field(const_cast<Config&>(c)))); };
  return spec;
}

// --precision: Lightning's names, and its alias "32" for "32-true".
OptionSpec precision_option() {
  OptionSpec spec = choice(
      "precision", "trainer", "32-true | tf32 | bf16-mixed (tf32, bf16-mixed: cuda only)",
      [](Config & c) -> auto& { return c.trainer.precision; });
  spec.set = [choose = spec.set](Config& c, const std::string& v) { choose(c, v == "32" ? "32-true" : v); };
  return spec;
}

// --logger: a valid list replaces the loggers; a bad one is kept for validate_config to refuse.
OptionSpec logger_option() {
  OptionSpec spec = named("logger", "observability", "comma list of csv, tensorboard, jsonl; or none");
  spec.set = [](Config& c, const std::string& v) {
    std::string expected;
    if (const std::optional<LoggerList> loggers = parse_logger_list(v, expected)) {
      c.trainer.logger = *loggers;
      c.refused_logger.clear();
      c.refused_logger_expected.clear();
    } else {
      c.refused_logger = v;
      c.refused_logger_expected = expected;
    }
  };
  spec.get = [](const Config& c) { return logger_list_text(c.trainer.logger); };
  return spec;
}

template <typename Field>
OptionSpec flag(std::string name, std::string negation, std::string group, std::string help, Field field) {
  OptionSpec spec = named(name, std::move(group), std::move(help));
  spec.is_flag = true;
  spec.negation = std::move(negation);
  spec.set = [name, field](Config& c, const std::string& v) { field(c) = parse_bool(name, v); };
  spec.get = [field](const Config& c) { return field(const_cast<Config&>(c)) ? "true" : "false"; };
  return spec;
}

// -1 or a count >= 1: --max-epochs, --max-steps.
template <typename Field>
OptionSpec count_or_minus_one(std::string name, std::string group, std::string help, std::string accepted,
                              Field field) {
  OptionSpec spec = named(name, std::move(group), std::move(help));
  spec.set = [name, accepted, field](Config& c, const std::string& v) {
    const int64_t x = parse_int(name, v, -1, kNoMax, accepted);
    if (x == 0) reject_value(name, v, accepted);
    field(c) = x;
  };
  spec.get = [field](const Config& c) { return std::to_string(field(const_cast<Config&>(c))); };
  return spec;
}

OptionSpec optimizer_option() {
  OptionSpec spec = named("optimizer", "optimizer", "adam | adamw | sgd");
  spec.set = [](Config& c, const std::string& v) {
    const std::string kind = parse_choice("optimizer", v, {"adam", "adamw", "sgd"});
    c.optimizer.kind = kind == "adam"    ? OptimizerKind::kAdam
                       : kind == "adamw" ? OptimizerKind::kAdamW
                                         : OptimizerKind::kSgd;
  };
  spec.get = [](const Config& c) { return std::string(optimizer_name(c.optimizer.kind)); };
  return spec;
}

OptionSpec weight_decay_option() {
  OptionSpec spec = named("weight-decay", "optimizer", "L2 (adam, sgd) or decoupled (adamw) decay; PyTorch's default");
  spec.set = [](Config& c, const std::string& v) {
    const double x = parse_real("weight-decay", v);
    if (x < 0) reject_value("weight-decay", v, "a number >= 0");
    c.optimizer.weight_decay = x;
    c.weight_decay_given = true;
  };
  spec.get = [](const Config& c) { return format_real(c.optimizer.weight_decay); };
  return spec;
}

OptionSpec betas_option() {
  OptionSpec spec = named("betas", "optimizer", "Adam's two betas, 'B1,B2', each in [0,1)");
  spec.set = [](Config& c, const std::string& v) {
    const auto comma = v.find(',');
    if (comma == std::string::npos || v.find(',', comma + 1) != std::string::npos) {
      reject_value("betas", v, "two numbers in [0,1) separated by a comma, e.g. 0.9,0.999");
    }
    const double b1 = parse_real("betas", v.substr(0, comma));
    const double b2 = parse_real("betas", v.substr(comma + 1));
    if (b1 < 0 || b1 >= 1 || b2 < 0 || b2 >= 1) reject_value("betas", v, "two numbers in [0,1)");
    c.optimizer.beta1 = b1;
    c.optimizer.beta2 = b2;
  };
  spec.get = [](const Config& c) { return format_real(c.optimizer.beta1) + "," + format_real(c.optimizer.beta2); };
  return spec;
}

OptionSpec limit_train_batches_option() {
  OptionSpec spec =
      named("limit-train-batches", "trainer", "a fraction of each epoch's batches (with a point, in (0,1]) or a count");
  spec.set = [](Config& c, const std::string& v) {
    const std::string accepted = "a fraction in (0,1] (with a point, e.g. 0.25) or a count >= 1";
    if (v.find_first_of(".eE") == std::string::npos) {
      c.trainer.limit_train_batches = {.count = parse_int("limit-train-batches", v, 1, kNoMax, accepted)};
      return;
    }
    const double x = parse_real("limit-train-batches", v);
    if (!(x > 0 && x <= 1)) reject_value("limit-train-batches", v, accepted);
    c.trainer.limit_train_batches = {.fraction = x, .count = std::nullopt};
  };
  spec.get = [](const Config& c) {
    const BatchLimit& limit = c.trainer.limit_train_batches;
    if (limit.count) return std::to_string(*limit.count);
    return limit.fraction == 1.0 ? std::string("1.0") : format_real(limit.fraction);
  };
  return spec;
}

OptionSpec devices_option() {
  OptionSpec spec = named("devices", "trainer", "devices (ranks) to train on, or auto (mpirun's world, else 1)");
  spec.set = [](Config& c, const std::string& v) {
    c.trainer.devices = v == "auto" ? 0 : static_cast<int>(parse_int("devices", v, 1, 4096));
  };
  spec.get = [](const Config& c) {
    return c.trainer.devices == 0 ? std::string("auto") : std::to_string(c.trainer.devices);
  };
  return spec;
}

OptionSpec seed_option() {
  OptionSpec spec = named("seed", "data", "seed of initialisation, data and shuffling");
  spec.set = [](Config& c, const std::string& v) {
    c.data.seed = static_cast<uint64_t>(parse_int("seed", v, 0, kNoMax));
    c.trainer.seed = c.data.seed;
  };
  spec.get = [](const Config& c) { return std::to_string(c.data.seed); };
  return spec;
}

constexpr double kAboveZero = std::numeric_limits<double>::denorm_min();
constexpr double kNoMaxReal = std::numeric_limits<double>::max();
// A bucket holds at least one byte (2^-20 MiB); at most 1 TiB, which converts to a byte
// count without overflow.
constexpr double kMinBucketMb = 1.0 / (1 << 20);
constexpr double kMaxBucketMb = 1 << 20;

std::vector<OptionSpec> make_table() {
  using C = Config;
  std::vector<OptionSpec> t;
  // model
  t.push_back(integer(
      "input-dim", "model", "inputs per sample", 1, kNoMax, [](C & c) -> auto& { return c.model.input_dim; }));
  t.push_back(integer(
      "hidden-size", "model", "width of each hidden layer", 1, kNoMax,
      [](C & c) -> auto& { return c.model.hidden_size; }));
  t.push_back(integer(
      "hidden-layers", "model", "hidden Linear+ReLU layers (0: one Linear)", 0, 1000,
      [](C & c) -> auto& { return c.model.hidden_layers; }));
  t.push_back(integer(
      "output-dim", "model", "targets per sample", 1, kNoMax, [](C & c) -> auto& { return c.model.output_dim; }));
  t.push_back(text_choice(
      "activation", "model", "hidden activation", {"relu"}, [](C & c) -> auto& { return c.activation; }));
  // data
  t.push_back(text(
      "data", "data", "random | teacher | csv:PATH", [](C & c) -> auto& { return c.data.data; }));
  t.push_back(integer(
      "dataset-size", "data", "samples per epoch (random, teacher)", 1, kNoMax,
      [](C & c) -> auto& { return c.data.dataset_size; }));
  t.push_back(integer(
      "batch-size", "data", "samples per micro-batch, per device", 1, kNoMax,
      [](C & c) -> auto& { return c.data.batch_size; }));
  t.push_back(flag(
      "shuffle", "no-shuffle", "data", "reshuffle the training set every epoch",
      [](C & c) -> auto& { return c.data.shuffle; }));
  t.push_back(integer(
      "loader-workers", "data", "prefetching threads (0: in the training thread)", 0, 64,
      [](C & c) -> auto& { return c.data.loader_workers; }));
  t.push_back(seed_option());
  // optimizer
  t.push_back(optimizer_option());
  t.push_back(real(
      "lr", "optimizer", "learning rate", kAboveZero, kNoMaxReal, "a number > 0",
      [](C & c) -> auto& { return c.optimizer.lr; }));
  t.push_back(real(
      "momentum", "optimizer", "SGD momentum (>= 0)", 0.0, kNoMaxReal, "a number >= 0",
      [](C & c) -> auto& { return c.optimizer.momentum; }));
  t.push_back(weight_decay_option());
  t.push_back(betas_option());
  t.push_back(real(
      // Below float32's smallest normal number it rounds to 0 or loses its digits, and 0 / 0 is NaN.
      "eps", "optimizer", "Adam's epsilon, added after the square root", std::numeric_limits<float>::min(), kNoMaxReal,
      "a number >= 1.2e-38 (the optimizer computes in float32, where a smaller one is 0)",
      [](C & c) -> auto& { return c.optimizer.eps; }));
  // trainer
  t.push_back(count_or_minus_one(
      "max-epochs", "trainer", "epochs to train (-1: until --max-steps)", "an integer >= 1, or -1 with --max-steps",
      [](C & c) -> auto& { return c.trainer.max_epochs; }));
  t.push_back(count_or_minus_one(
      "max-steps", "trainer", "stop after this many optimizer steps (-1: no limit)",
      "an integer >= 1, or -1 for no limit", [](C & c) -> auto& { return c.trainer.max_steps; }));
  t.push_back(integer(
      "accumulate-grad-batches", "trainer", "micro-batches per optimizer step", 1, kNoMax,
      [](C & c) -> auto& { return c.trainer.accumulate_grad_batches; }));
  t.push_back(integer(
      "check-val-every-n-epoch", "trainer", "validate every N epochs", 1, kNoMax,
      [](C & c) -> auto& { return c.trainer.check_val_every_n_epoch; }));
  t.push_back(limit_train_batches_option());
  t.push_back(integer(
      "log-every-n-steps", "trainer", "log training metrics every N optimizer steps", 1, kNoMax,
      [](C & c) -> auto& { return c.trainer.log_every_n_steps; }));
  t.push_back(choice(
      "accelerator", "trainer", "cpu | cuda | auto", [](C & c) -> auto& { return c.trainer.accelerator; }));
  t.push_back(precision_option());
  t.push_back(devices_option());
  t.push_back(integer(
      "num-nodes", "trainer", "machines (checked against the MPI world)", 1, 4096,
      [](C & c) -> auto& { return c.trainer.num_nodes; }));
  t.push_back(choice(
      "strategy", "trainer", "auto | single | ddp | ddp_zero1", [](C & c) -> auto& { return c.trainer.strategy; }));
  t.push_back(integer(
      "threads-per-device", "trainer", "BLAS threads per rank", 1, 256,
      [](C & c) -> auto& { return c.trainer.threads_per_device; }));
  // ddp
  t.push_back(real(
      "bucket-cap-mb", "ddp", "gradient bucket size in MiB", kMinBucketMb, kMaxBucketMb,
      fmt::format("a number of MiB from {} (one byte) to {} (1 TiB)", kMinBucketMb, kMaxBucketMb),
      [](C & c) -> auto& { return c.trainer.bucket_cap_mb; }));
  t.push_back(flag(
      "no-overlap", "", "ddp", "one allreduce after backward instead of per bucket during it",
      [](C & c) -> auto& { return c.trainer.no_overlap; }));
  t.push_back(flag(
      "sync-every-micro-batch", "", "ddp", "allreduce on every micro-batch (ablation of no_sync)",
      [](C & c) -> auto& { return c.trainer.sync_every_micro_batch; }));
  t.push_back(flag(
      "no-cuda-graph", "", "trainer", "cuda: launch each kernel of a step instead of one CUDA graph per step",
      [](C & c) -> auto& { return c.trainer.no_cuda_graph; }));
  t.push_back(choice(
      "process-group-backend", "ddp", "auto | nccl | mpi: how GPU ranks average gradients (cuda only)",
      [](C & c) -> auto& { return c.trainer.process_group_backend; }));
  // observability
  t.push_back(choice(
      "profiler", "observability", "none | simple | trace", [](C & c) -> auto& { return c.trainer.profiler; }));
  t.push_back(integer(
      "monitor-interval-ms", "observability", "device utilization sampling period (0: off)", 0, 3600000,
      [](C & c) -> auto& { return c.trainer.monitor_interval_ms; }));
  t.push_back(choice(
      "monitor-mode", "observability", "background | per-step", [](C & c) -> auto& { return c.trainer.monitor_mode; }));
  t.push_back(logger_option());
  t.push_back(text(
      "default-root-dir", "observability", "folder of the run folders",
      [](C & c) -> auto& { return c.trainer.default_root_dir; }));
  t.push_back(text(
      "name", "observability", "experiment name: <root>/<name>/version_<n>",
      [](C & c) -> auto& { return c.trainer.name; }));
  t.push_back(text(
      "version", "observability", "run folder version (default: next free)",
      [](C & c) -> auto& { return c.trainer.version; }));
  t.push_back(choice(
      "progress-bar", "observability", "auto | on | off (auto: on when stderr is a terminal)",
      [](C & c) -> auto& { return c.trainer.progress_bar; }));
  // checkpoints
  t.push_back(text(
      "ckpt-path", "checkpoints", "resume from this checkpoint", [](C & c) -> auto& { return c.trainer.ckpt_path; }));
  t.push_back(integer(
      "checkpoint-every-n-epochs", "checkpoints", "checkpoint period in epochs (0: off)", 0, kNoMax,
      [](C & c) -> auto& { return c.trainer.checkpoint_every_n_epochs; }));
  t.push_back(text(
      "init-from", "checkpoints", "load parameters from a safetensors file",
      [](C & c) -> auto& { return c.trainer.init_from; }));
  return t;
}

std::string canonical(std::string_view name) {
  std::string out(name);
  std::replace(out.begin(), out.end(), '_', '-');
  return out;
}

}  // namespace

const std::vector<OptionSpec>& option_specs() {
  static const std::vector<OptionSpec> kTable = make_table();
  return kTable;
}

void apply_option(Config& config, std::string_view name, const std::string& value) {
  const std::string key = canonical(name);
  for (const OptionSpec& spec : option_specs()) {
    if (spec.name == key) return spec.set(config, value);
    if (!spec.negation.empty() && spec.negation == key) {
      return spec.set(config, parse_bool(key, value) ? "false" : "true");
    }
  }
  throw UsageError(fmt::format("unknown option '{}'; run 'ddpscope train --help' for the list", name));
}

void apply_preset(Config& config, std::string_view preset) {
  if (preset == "seed") {
    config.trainer.strategy = Strategy::kDdp;
    config.trainer.devices = 3;
    config.trainer.accumulate_grad_batches = 3;
    config.preset = "seed";
    return;
  }
  reject_value("preset", std::string(preset), "seed");
}

OptionTexts resolved_options(const Config& config) {
  OptionTexts out;
  for (const OptionSpec& spec : option_specs()) {
    std::string key = spec.name;
    std::replace(key.begin(), key.end(), '-', '_');
    out.emplace_back(key, spec.get(config));
  }
  out.emplace_back("preset", config.preset);
  return out;
}

}  // namespace ddp
