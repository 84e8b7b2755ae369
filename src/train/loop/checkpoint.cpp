#include "train/loop/checkpoint.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <span>
#include <string_view>

#include "base/check.h"
#include "base/excerpt.h"
#include "ddpscope/error.h"
#include "train/config/option_json.h"

namespace ddp {
namespace {

constexpr std::string_view kOptimizerPrefix = "optimizer.";
constexpr const char* kStepTensor = "optimizer.step";
constexpr const char* kRngNote =
    "no generator state: the data order and values are a pure function of (seed, epoch, index), "
    "so the sampler state is (seed, epoch, next_batch)";
// A file with hundreds of foreign tensors must not make a message of hundreds of lines.
constexpr std::size_t kMaxExtrasNamed = 8;

std::string shape_text(const std::vector<int64_t>& shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

// Names from a file, cut short: a hostile file must not make a megabyte-long message.
std::string brief(std::string_view text) {
  constexpr std::size_t kMax = 80;
  return text.size() > kMax ? printable(text.substr(0, kMax)) + "..." : printable(text);
}

// One layer tensor and where it lives in a flat buffer of the parameters' layout.
struct LayerTensor {
  std::string name;  // "layers.<l>.weight"
  std::vector<int64_t> shape;
  std::size_t offset = 0;
  std::size_t count = 0;
};

std::vector<LayerTensor> layer_tensors(const Mlp& model) {
  std::vector<LayerTensor> out;
  for (std::size_t l = 0; l < model.layers().size(); ++l) {
    const LinearLayout& layer = model.layers()[l];
    out.push_back({fmt::format("layers.{}.weight", l),
                   {layer.out, layer.in},
                   layer.weight_offset,
                   static_cast<std::size_t>(layer.out * layer.in)});
    out.push_back(
        {fmt::format("layers.{}.bias", l), {layer.out}, layer.bias_offset, static_cast<std::size_t>(layer.out)});
  }
  return out;
}

std::string state_tensor_name(std::string_view state, const std::string& layer_tensor) {
  return fmt::format("{}{}.{}", kOptimizerPrefix, state, layer_tensor);
}

std::string model_text(const MlpShape& shape) {
  return fmt::format("--input-dim {} --hidden-size {} --hidden-layers {} --output-dim {}", shape.input_dim,
                     shape.hidden_size, shape.hidden_layers, shape.output_dim);
}

// A tensor the run needs, where its values go, and who needs it (for messages).
struct Slot {
  std::string name;
  std::vector<int64_t> shape;
  std::span<float> target;
  std::string owner;  // "the model", "the adam optimizer"
};

std::vector<Slot> parameter_slots(Mlp& model) {
  std::vector<Slot> slots;
  for (const LayerTensor& t : layer_tensors(model))
    slots.push_back({t.name, t.shape, model.params().subspan(t.offset, t.count), "the model"});
  return slots;
}

// Finds each slot's tensor and checks its dtype and shape. found[i] is slots[i]'s tensor
// when it fits; every misfit is one sentence in `problems`.
std::vector<const Tensor*> match(const SafetensorsFile& file, const std::vector<Slot>& slots, bool accept_f64,
                                 std::vector<std::string>& problems) {
  std::vector<const Tensor*> found;
  for (const Slot& slot : slots) {
    const Tensor* tensor = file.find(slot.name);
    found.push_back(nullptr);
    if (tensor == nullptr) {
      problems.push_back(
          fmt::format("tensor '{}' is missing ({} expects F32 {})", slot.name, slot.owner, shape_text(slot.shape)));
      continue;
    }
    const bool dtype_ok = tensor->dtype == Dtype::kF32 || (accept_f64 && tensor->dtype == Dtype::kF64);
    if (!dtype_ok) {
      problems.push_back(fmt::format("tensor '{}' is {}, {} expects F32{}", slot.name, dtype_name(tensor->dtype),
                                     slot.owner, accept_f64 ? " (or F64)" : ""));
      continue;
    }
    if (tensor->shape != slot.shape) {
      problems.push_back(fmt::format("tensor '{}' has shape {}, {} expects {}", slot.name, shape_text(tensor->shape),
                                     slot.owner, shape_text(slot.shape)));
      continue;
    }
    found.back() = tensor;
  }
  return found;
}

// The file's tensors that no slot names and that `excused` does not accept, as problems.
void add_extras(const SafetensorsFile& file, const std::vector<Slot>& slots, const std::string& what_lacks_them,
                bool (*excused)(std::string_view), std::vector<std::string>& problems) {
  std::set<std::string_view> known;
  for (const Slot& slot : slots) known.insert(slot.name);
  std::size_t extras = 0;
  for (const Tensor& tensor : file.tensors) {
    if (known.count(tensor.name) != 0 || excused(tensor.name)) continue;
    if (++extras <= kMaxExtrasNamed) {
      problems.push_back(fmt::format("tensor '{}' ({} {}) is in the file but not in {}", brief(tensor.name),
                                     dtype_name(tensor.dtype), shape_text(tensor.shape), what_lacks_them));
    }
  }
  if (extras > kMaxExtrasNamed)
    problems.push_back(fmt::format("and {} more tensors not in {}", extras - kMaxExtrasNamed, what_lacks_them));
}

// A parameter or state that is NaN or infinite would only fail later, as a diverged run:
// refused at load, naming the tensor (DataError). `what` names the file for the message.
void check_finite(const std::string& what, const std::vector<Slot>& slots, const std::vector<const Tensor*>& tensors) {
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const Tensor& tensor = *tensors[i];
    for (int64_t j = 0; j < tensor.numel(); ++j) {
      double value = 0;
      if (tensor.dtype == Dtype::kF32) {
        float f = 0;
        std::memcpy(&f, tensor.bytes.data() + j * sizeof(float), sizeof(float));
        value = f;
      } else {
        std::memcpy(&value, tensor.bytes.data() + j * sizeof(double), sizeof(double));
      }
      if (!std::isfinite(value) || std::fabs(value) > std::numeric_limits<float>::max()) {
        throw DataError(
            fmt::format("{}: tensor '{}' holds {} at element {}; the run that wrote it had diverged or the "
                        "file is damaged: use an earlier checkpoint",
                        what, slots[i].name, value, j));
      }
      // A mean of squares: a negative one makes Adam's step the square root of a negative number.
      if (value < 0 && slots[i].name.find("exp_avg_sq") != std::string::npos) {
        throw DataError(
            fmt::format("{}: tensor '{}' holds {} at element {}; Adam's second moment is a mean of "
                        "squares, never negative: the file is damaged, use an earlier checkpoint",
                        what, slots[i].name, value, j));
      }
    }
  }
}

// Only after every check passed, so that a refused file leaves the model untouched.
void copy_in(const std::vector<Slot>& slots, const std::vector<const Tensor*>& tensors) {
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const Tensor& tensor = *tensors[i];
    const std::span<float> target = slots[i].target;
    DDP_CHECK_EQ(static_cast<std::size_t>(tensor.numel()), target.size(), "a checked tensor has the wrong size");
    if (tensor.dtype == Dtype::kF32) {
      if (!target.empty()) std::memcpy(target.data(), tensor.bytes.data(), tensor.bytes.size());
    } else {
      DDP_CHECK_EQ(tensor.dtype, Dtype::kF64);
      for (std::size_t j = 0; j < target.size(); ++j) {
        double value = 0;
        std::memcpy(&value, tensor.bytes.data() + j * sizeof(double), sizeof(double));
        target[j] = static_cast<float>(value);  // round to nearest, as torch's .float()
      }
    }
  }
}

std::string joined(const std::vector<std::string>& problems) { return fmt::format("{}", fmt::join(problems, "; ")); }

bool mentions(const std::vector<std::string>& problems, std::string_view text) {
  for (const std::string& p : problems) {
    if (p.find(text) != std::string::npos) return true;
  }
  return false;
}

[[noreturn]] void invalid_checkpoint(const std::filesystem::path& file, const std::string& reason) {
  throw DataError(fmt::format("{}: not a valid ddpscope checkpoint: {}", file.string(), reason));
}

// Positions and counts up to 2^53: exact as JSON numbers, and far from wrapping as training adds to them.
constexpr int64_t kMaxPosition = int64_t{1} << 53;

template <class T>
T position_field(const std::filesystem::path& file, const std::map<std::string, std::string>& metadata, const char* key,
                 T minimum, T maximum = std::numeric_limits<T>::max()) {
  const auto it = metadata.find(key);
  if (it == metadata.end()) invalid_checkpoint(file, fmt::format("its metadata has no \"{}\"", key));
  const std::string& text = it->second;
  T value{};
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty() || value < minimum) {
    invalid_checkpoint(file,
                       fmt::format("metadata \"{}\" is \"{}\", expected an integer >= {}", key, brief(text), minimum));
  }
  if (value > maximum) {
    invalid_checkpoint(file, fmt::format("metadata \"{}\" is \"{}\", expected an integer >= {} and at most {}", key,
                                         brief(text), minimum, maximum));
  }
  return value;
}

bool is_step_tensor(std::string_view name) { return name == kStepTensor; }
bool is_optimizer_tensor(std::string_view name) { return name.starts_with(kOptimizerPrefix); }

}  // namespace

void save_checkpoint(const std::filesystem::path& file, const Mlp& model, Optimizer& optimizer,
                     OptimizerKind optimizer_kind, const TrainingPosition& position,
                     const OptionTexts& config_options) {
  const std::vector<LayerTensor> layers = layer_tensors(model);
  const std::vector<std::pair<std::string, std::span<float>>> state = optimizer.state();
  const std::vector<int64_t> step{optimizer.steps()};

  std::vector<TensorView> views;
  for (const LayerTensor& t : layers) views.emplace_back(t.name, t.shape, model.params().subspan(t.offset, t.count));
  for (const auto& [state_name, buffer] : state) {
    DDP_CHECK_EQ(buffer.size(), model.num_params(), "optimizer state differs from the parameters' layout");
    for (const LayerTensor& t : layers) {
      views.emplace_back(state_tensor_name(state_name, t.name), t.shape,
                         std::span<const float>(buffer.subspan(t.offset, t.count)));
    }
  }
  views.emplace_back(kStepTensor, std::vector<int64_t>{}, step);

  const std::map<std::string, std::string> metadata{
      {"format", kCheckpointFormat},
      {"ddpscope_version", DDPSCOPE_VERSION},
      {"config", config_json(config_options).dump()},
      {"optimizer", std::string(optimizer_name(optimizer_kind))},
      {"epoch", std::to_string(position.epoch)},
      {"next_batch", std::to_string(position.next_batch)},
      {"global_step", std::to_string(position.global_step)},
      {"world_size", std::to_string(position.world_size)},
      {"seed", std::to_string(position.seed)},
      {"rng", kRngNote},
  };
  write_safetensors(file, views, metadata);
}

LoadedCheckpoint read_checkpoint(const std::filesystem::path& file) {
  LoadedCheckpoint checkpoint;
  checkpoint.path = file;
  checkpoint.file = read_safetensors(file);
  checkpoint.metadata = checkpoint.file.metadata;
  const auto& metadata = checkpoint.metadata;

  const auto format = metadata.find("format");
  if (format == metadata.end()) {
    invalid_checkpoint(file, fmt::format("its metadata has no \"format\" (expected \"{}\"); a file of parameters "
                                         "alone can start a run with --init-from",
                                         kCheckpointFormat));
  }
  if (format->second != kCheckpointFormat) {
    invalid_checkpoint(file,
                       fmt::format("its format is \"{}\", expected \"{}\"{}", brief(format->second), kCheckpointFormat,
                                   format->second == "pt" ? " (a file of parameters alone, such as "
                                                            "final.safetensors, can start a run with --init-from)"
                                                          : ""));
  }
  if (metadata.find("optimizer") == metadata.end()) invalid_checkpoint(file, "its metadata has no \"optimizer\"");

  TrainingPosition& position = checkpoint.position;
  position.epoch = position_field<int64_t>(file, metadata, "epoch", 0, kMaxPosition);
  position.next_batch = position_field<int64_t>(file, metadata, "next_batch", 0, kMaxPosition);
  position.global_step = position_field<int64_t>(file, metadata, "global_step", 0, kMaxPosition);
  position.world_size = position_field<int>(file, metadata, "world_size", 1);
  position.seed = position_field<uint64_t>(file, metadata, "seed", 0);
  return checkpoint;
}

void restore_checkpoint(const LoadedCheckpoint& checkpoint, Mlp& model, Optimizer& optimizer,
                        OptimizerKind optimizer_kind) {
  const std::string path = checkpoint.path.string();
  const std::string wanted(optimizer_name(optimizer_kind));
  const auto written = checkpoint.metadata.find("optimizer");
  const std::string got = written == checkpoint.metadata.end() ? "(none)" : brief(written->second);
  if (got != wanted) {
    throw UsageError(
        fmt::format("checkpoint {} was written with --optimizer {}, but this run is configured with "
                    "--optimizer {}: resume with --optimizer {}, or start from its parameters alone "
                    "with --init-from {}",
                    path, got, wanted, got, path));
  }

  const std::string owner = fmt::format("the {} optimizer", wanted);
  std::vector<Slot> slots = parameter_slots(model);
  const std::vector<LayerTensor> layers = layer_tensors(model);
  for (const auto& [state_name, buffer] : optimizer.state()) {
    DDP_CHECK_EQ(buffer.size(), model.num_params(), "optimizer state differs from the parameters' layout");
    for (const LayerTensor& t : layers)
      slots.push_back({state_tensor_name(state_name, t.name), t.shape, buffer.subspan(t.offset, t.count), owner});
  }

  std::vector<std::string> problems;
  const std::vector<const Tensor*> found = match(checkpoint.file, slots, /*accept_f64=*/false, problems);
  add_extras(checkpoint.file, slots, "this run's model and optimizer", is_step_tensor, problems);
  int64_t steps = 0;
  const Tensor* step = checkpoint.file.find(kStepTensor);
  if (step == nullptr) {
    problems.push_back(fmt::format("tensor '{}' is missing ({} expects I64 [])", kStepTensor, owner));
  } else if (step->dtype != Dtype::kI64 || step->numel() != 1 || step->shape.size() > 1) {
    problems.push_back(fmt::format("tensor '{}' is {} {}, {} expects I64 []", kStepTensor, dtype_name(step->dtype),
                                   shape_text(step->shape), owner));
  } else if ((steps = step->values<int64_t>()[0]) < 0) {
    problems.push_back(fmt::format("tensor '{}' holds {}, expected a count >= 0", kStepTensor, steps));
  }

  if (!problems.empty()) {
    std::string hint;
    if (mentions(problems, "'layers.")) hint += fmt::format(" (this run's model: {})", model_text(model.shape()));
    if (mentions(problems, "'optimizer.momentum_buffer."))
      hint += " (SGD keeps a momentum buffer only when --momentum is not 0: the checkpoint and this run disagree)";
    throw UsageError(fmt::format("checkpoint {} does not fit this run: {}{}", path, joined(problems), hint));
  }
  check_finite("checkpoint " + path, slots, found);
  copy_in(slots, found);
  optimizer.set_steps(steps);
}

void load_parameters(const std::filesystem::path& file, Mlp& model) {
  const SafetensorsFile contents = read_safetensors(file);
  const std::vector<Slot> slots = parameter_slots(model);
  std::vector<std::string> problems;
  const std::vector<const Tensor*> found = match(contents, slots, /*accept_f64=*/true, problems);
  const std::size_t mismatches = problems.size();
  add_extras(contents, slots, "the model", is_optimizer_tensor, problems);
  if (!problems.empty()) {
    std::string hint = fmt::format(" (the model: {}", model_text(model.shape()));
    if (problems.size() > mismatches) {
      hint += fmt::format(
          "; ddpscope names Linear layer l's parameters layers.<l>.weight [out, in] and "
          "layers.<l>.bias [out], l = 0..{}, counting Linear layers only",
          model.layers().size() - 1);
    }
    hint += ")";
    throw UsageError(
        fmt::format("--init-from {}: the file does not fit the model: {}{}", file.string(), joined(problems), hint));
  }
  check_finite("--init-from " + file.string(), slots, found);
  copy_in(slots, found);
}

void save_parameters(const std::filesystem::path& file, const Mlp& model, const OptionTexts& config_options) {
  std::vector<TensorView> views;
  for (const LayerTensor& t : layer_tensors(model))
    views.emplace_back(t.name, t.shape, model.params().subspan(t.offset, t.count));
  write_safetensors(
      file, views,
      {{"format", "pt"}, {"ddpscope_version", DDPSCOPE_VERSION}, {"config", config_json(config_options).dump()}});
}

}  // namespace ddp
