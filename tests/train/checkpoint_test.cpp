#include "train/loop/checkpoint.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "support/run_command.h"

namespace ddp {
namespace {

namespace fs = std::filesystem;
using testing::fresh_dir;
using testing::read_text;

const fs::path kChecker = fs::path(__FILE__).parent_path() / "check_checkpoint.py";

const MlpShape kShape{.input_dim = 3, .hidden_size = 5, .hidden_layers = 2, .output_dim = 2};
const OptionTexts kOptions{{"input_dim", "3"}, {"lr", "0.01"}};

fs::path test_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return fresh_dir(std::string("train_checkpoint_") + info->name() + "_" + std::to_string(::getpid()));
}

// A model and optimizer some steps into training, so that every state buffer is non-zero.
struct Trained {
  Mlp model;
  OptimizerKind kind;
  std::unique_ptr<Optimizer> optimizer;

  Trained(const MlpShape& shape, OptimizerConfig config, uint64_t seed, int steps)
      : model(shape), kind(config.kind), optimizer(make_optimizer(config, model.num_params())) {
    model.init_like_pytorch(seed);
    for (int t = 0; t < steps; ++t) step(t);
  }
  void step(int t) {
    std::vector<float> grads(model.num_params());
    for (std::size_t i = 0; i < grads.size(); ++i) grads[i] = static_cast<float>(std::sin(0.37 * i + 1.3 * t));
    optimizer->step(model.params(), grads);
  }
};

OptimizerConfig adam() { return {.kind = OptimizerKind::kAdam}; }
OptimizerConfig sgd(double momentum) { return {.kind = OptimizerKind::kSgd, .lr = 0.1, .momentum = momentum}; }

bool same_bits(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size_bytes()) == 0;
}

const TrainingPosition kPosition{
    .epoch = 7, .next_batch = 3, .global_step = 123456789012, .world_size = 3, .seed = 18446744073709551615ull};

// Saves `from`, restores into a fresh run of the same configuration, and checks that
// parameters, every state buffer, the step count and the position come back bit for bit,
// and that both then take the same next step.
void expect_round_trip(const OptimizerConfig& config, std::size_t expected_states) {
  const fs::path path = test_dir() / "ckpt.safetensors";
  Trained from(kShape, config, 1, 3);
  ASSERT_EQ(from.optimizer->state().size(), expected_states);
  save_checkpoint(path, from.model, *from.optimizer, from.kind, kPosition, kOptions);

  Trained to(kShape, config, 2, 0);
  const LoadedCheckpoint checkpoint = read_checkpoint(path);
  restore_checkpoint(checkpoint, to.model, *to.optimizer, to.kind);

  EXPECT_TRUE(same_bits(to.model.params(), from.model.params()));
  const auto from_state = from.optimizer->state(), to_state = to.optimizer->state();
  ASSERT_EQ(to_state.size(), from_state.size());
  for (std::size_t s = 0; s < from_state.size(); ++s) {
    EXPECT_EQ(to_state[s].first, from_state[s].first);
    EXPECT_TRUE(same_bits(to_state[s].second, from_state[s].second)) << from_state[s].first;
  }
  EXPECT_EQ(to.optimizer->steps(), 3);
  const TrainingPosition& p = checkpoint.position;
  EXPECT_EQ(p.epoch, 7);
  EXPECT_EQ(p.next_batch, 3);
  EXPECT_EQ(p.global_step, 123456789012);
  EXPECT_EQ(p.world_size, 3);
  EXPECT_EQ(p.seed, 18446744073709551615ull);

  from.step(3);
  to.step(3);
  EXPECT_TRUE(same_bits(to.model.params(), from.model.params()));
}

TEST(Checkpoint, RoundTripsModelAdamStateAndPositionBitExact) { expect_round_trip(adam(), 2); }
TEST(Checkpoint, RoundTripsAdamW) { expect_round_trip({.kind = OptimizerKind::kAdamW}, 2); }
TEST(Checkpoint, RoundTripsSgdWithMomentum) { expect_round_trip(sgd(0.9), 1); }
TEST(Checkpoint, RoundTripsPlainSgd) { expect_round_trip(sgd(0.0), 0); }

TEST(Checkpoint, WritesTheDocumentedNamesShapesAndMetadata) {
  const fs::path path = test_dir() / "ckpt.safetensors";
  Trained run(kShape, adam(), 1, 2);
  save_checkpoint(path, run.model, *run.optimizer, run.kind, kPosition, kOptions);
  const SafetensorsFile file = read_safetensors(path);

  EXPECT_EQ(file.metadata.at("format"), "ddpscope.checkpoint/1");
  EXPECT_EQ(file.metadata.at("ddpscope_version"), DDPSCOPE_VERSION);
  EXPECT_EQ(file.metadata.at("config"), R"({"input_dim":3,"lr":0.01})");  // as summary.json writes options
  EXPECT_EQ(file.metadata.at("optimizer"), "adam");
  EXPECT_EQ(file.metadata.at("epoch"), "7");
  EXPECT_EQ(file.metadata.at("next_batch"), "3");
  EXPECT_EQ(file.metadata.at("global_step"), "123456789012");
  EXPECT_EQ(file.metadata.at("world_size"), "3");
  EXPECT_EQ(file.metadata.at("seed"), "18446744073709551615");
  EXPECT_NE(file.metadata.at("rng").find("(seed, epoch, next_batch)"), std::string::npos);
  EXPECT_EQ(file.metadata.size(), 10u);

  ASSERT_EQ(file.tensors.size(), 3 * 6 + 1u);
  EXPECT_EQ(file.find("layers.0.weight")->shape, (std::vector<int64_t>{5, 3}));
  EXPECT_EQ(file.find("layers.2.bias")->shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(file.find("optimizer.exp_avg_sq.layers.1.weight")->shape, (std::vector<int64_t>{5, 5}));
  const Tensor* step = file.find("optimizer.step");
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->dtype, Dtype::kI64);
  EXPECT_TRUE(step->shape.empty());
  EXPECT_EQ(step->values<int64_t>(), std::vector<int64_t>{2});
}

std::string run_python(const std::string& args, const fs::path& dir) {
  const fs::path out = dir / "python_out.json", err = dir / "python_err.txt";
  const std::string command =
      "/usr/bin/python3 '" + kChecker.string() + "' " + args + " >'" + out.string() + "' 2>'" + err.string() + "'";
  const int status = std::system(command.c_str());
  EXPECT_EQ(status, 0) << command << "\n"
                       << read_text(err)
                       << "(the independent checks need Debian's numpy: apt-get install python3-numpy)";
  return read_text(out);
}

TEST(Checkpoint, AnIndependentReaderFindsTheDocumentedLayoutAndOurValues) {
  const fs::path dir = test_dir();
  const fs::path path = dir / "ckpt.safetensors";
  Trained run(kShape, sgd(0.5), 1, 4);
  save_checkpoint(path, run.model, *run.optimizer, run.kind, kPosition, kOptions);
  const nlohmann::json got = nlohmann::json::parse(run_python("check '" + path.string() + "'", dir));

  EXPECT_EQ(got["widths"], nlohmann::json({3, 5, 5, 2}));
  EXPECT_EQ(got["optimizer"], "sgd");
  EXPECT_EQ(got["state"], nlohmann::json({"momentum_buffer"}));
  EXPECT_EQ(got["step"], 4);
  EXPECT_EQ(got["position"], nlohmann::json({{"epoch", 7},
                                             {"next_batch", 3},
                                             {"global_step", 123456789012},
                                             {"world_size", 3},
                                             {"seed", 18446744073709551615ull}}));
  EXPECT_EQ(got["config"], nlohmann::json({{"input_dim", 3}, {"lr", 0.01}}));
  // F32 values printed as doubles come back exactly; params() is in PyTorch's order.
  const std::vector<double> params = got["params"].get<std::vector<double>>();
  ASSERT_EQ(params.size(), run.model.num_params());
  for (std::size_t i = 0; i < params.size(); ++i) ASSERT_EQ(static_cast<float>(params[i]), run.model.params()[i]) << i;
}

template <class E>
std::string error_of(const std::function<void()>& action) {
  try {
    action();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "another error: " << e.what();
    return {};
  }
  ADD_FAILURE() << "no error";
  return {};
}

// A checkpoint of kShape with Adam, read back, to be altered by the mismatch tests.
struct Saved {
  fs::path path = test_dir() / "ckpt.safetensors";
  LoadedCheckpoint checkpoint;
  Saved() {
    Trained run(kShape, adam(), 1, 2);
    save_checkpoint(path, run.model, *run.optimizer, run.kind, kPosition, kOptions);
    checkpoint = read_checkpoint(path);
  }
  Tensor& tensor(std::string_view name) {
    for (Tensor& t : checkpoint.file.tensors) {
      if (t.name == name) return t;
    }
    throw std::runtime_error("no tensor " + std::string(name));
  }
  void erase(std::string_view name) {
    std::erase_if(checkpoint.file.tensors, [&](const Tensor& t) { return t.name == name; });
  }
  // The message of restoring into a fresh run; the run must be left as it was.
  std::string refusal(const MlpShape& shape = kShape, const OptimizerConfig& config = adam()) {
    Trained run(shape, config, 5, 1);
    const std::vector<float> before(run.model.params().begin(), run.model.params().end());
    const std::string message =
        error_of<UsageError>([&] { restore_checkpoint(checkpoint, run.model, *run.optimizer, run.kind); });
    EXPECT_TRUE(same_bits(run.model.params(), before)) << "a refused checkpoint changed the model";
    EXPECT_EQ(run.optimizer->steps(), 1);
    return message;
  }
  std::string prefix() const { return "checkpoint " + path.string() + " does not fit this run: "; }
};

const std::string kModelHint = " (this run's model: --input-dim 3 --hidden-size 5 --hidden-layers 2 --output-dim 2)";

TEST(Checkpoint, RefusesAMissingTensor) {
  Saved saved;
  saved.erase("layers.1.bias");
  EXPECT_EQ(saved.refusal(),
            saved.prefix() + "tensor 'layers.1.bias' is missing (the model expects F32 [5])" + kModelHint);
  Saved state;
  state.erase("optimizer.exp_avg.layers.2.weight");
  EXPECT_EQ(
      state.refusal(),
      state.prefix() + "tensor 'optimizer.exp_avg.layers.2.weight' is missing (the adam optimizer expects F32 [2, 5])");
  Saved step;
  step.erase("optimizer.step");
  EXPECT_EQ(step.refusal(), step.prefix() + "tensor 'optimizer.step' is missing (the adam optimizer expects I64 [])");
}

TEST(Checkpoint, RefusesAnExtraTensor) {
  Saved saved;
  Tensor extra = saved.tensor("layers.2.bias");
  extra.name = "layers.3.bias";
  saved.checkpoint.file.tensors.push_back(extra);
  EXPECT_EQ(saved.refusal(), saved.prefix() +
                                 "tensor 'layers.3.bias' (F32 [2]) is in the file but not in this run's model and "
                                 "optimizer" +
                                 kModelHint);
}

TEST(Checkpoint, RefusesAWrongShape) {
  Saved saved;
  saved.tensor("layers.0.weight").shape = {15};
  EXPECT_EQ(saved.refusal(),
            saved.prefix() + "tensor 'layers.0.weight' has shape [15], the model expects [5, 3]" + kModelHint);
}

TEST(Checkpoint, RefusesAWrongDtype) {
  Saved saved;
  Tensor& weight = saved.tensor("layers.0.weight");
  std::vector<double> wide;
  for (const float v : weight.values<float>()) wide.push_back(v);
  weight.dtype = Dtype::kF64;
  weight.bytes.resize(wide.size() * sizeof(double));
  std::memcpy(weight.bytes.data(), wide.data(), weight.bytes.size());
  EXPECT_EQ(saved.refusal(), saved.prefix() + "tensor 'layers.0.weight' is F64, the model expects F32" + kModelHint);

  Saved step;
  step.tensor("optimizer.step").dtype = Dtype::kF64;
  EXPECT_EQ(step.refusal(), step.prefix() + "tensor 'optimizer.step' is F64 [], the adam optimizer expects I64 []");
}

TEST(Checkpoint, RefusesAnotherOptimizerKind) {
  Saved saved;
  const std::string path = saved.path.string();
  EXPECT_EQ(saved.refusal(kShape, sgd(0.9)),
            "checkpoint " + path +
                " was written with --optimizer adam, but this run is configured with --optimizer "
                "sgd: resume with --optimizer adam, or start from its parameters alone with "
                "--init-from " +
                path);
}

TEST(Checkpoint, NamesTheMomentumDisagreementOfSgd) {
  const fs::path path = test_dir() / "ckpt.safetensors";
  Trained run(kShape, sgd(0.9), 1, 2);
  save_checkpoint(path, run.model, *run.optimizer, run.kind, kPosition, kOptions);
  Trained plain(kShape, sgd(0.0), 1, 0);
  const std::string message = error_of<UsageError>(
      [&] { restore_checkpoint(read_checkpoint(path), plain.model, *plain.optimizer, plain.kind); });
  EXPECT_NE(message.find("tensor 'optimizer.momentum_buffer.layers.0.weight' (F32 [5, 3]) is in the file but not in "
                         "this run's model and optimizer"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("the checkpoint and this run disagree"), std::string::npos) << message;
}

TEST(Checkpoint, NamesEveryMismatchOfAnotherModelWidth) {
  Saved saved;
  MlpShape wider = kShape;
  wider.hidden_size = 6;
  const std::string message = saved.refusal(wider);
  EXPECT_NE(message.find("tensor 'layers.0.weight' has shape [5, 3], the model expects [6, 3]"), std::string::npos);
  EXPECT_NE(message.find("tensor 'optimizer.exp_avg_sq.layers.2.weight' has shape [2, 5], the adam optimizer "
                         "expects [2, 6]"),
            std::string::npos);
  EXPECT_NE(message.find("--hidden-size 6"), std::string::npos) << message;
}

TEST(Checkpoint, ReadRefusesAPlainSafetensorsFile) {
  const fs::path dir = test_dir();
  const fs::path path = dir / "weights.safetensors";
  run_python("write-mlp '" + path.string() + "' 3,5,5,2", dir);
  EXPECT_EQ(error_of<DataError>([&] { read_checkpoint(path); }),
            path.string() +
                ": not a valid ddpscope checkpoint: its metadata has no \"format\" (expected "
                "\"ddpscope.checkpoint/1\"); a file of parameters alone can start a run with --init-from");
}

TEST(Checkpoint, ReadRefusesFinalParametersWithAHint) {
  const fs::path path = test_dir() / "final.safetensors";
  Trained run(kShape, adam(), 1, 0);
  save_parameters(path, run.model, kOptions);
  EXPECT_EQ(error_of<DataError>([&] { read_checkpoint(path); }),
            path.string() +
                ": not a valid ddpscope checkpoint: its format is \"pt\", expected \"ddpscope.checkpoint/1\" (a file "
                "of parameters alone, such as final.safetensors, can start a run with --init-from)");
}

// The checkpoint at `path` rewritten with one metadata entry changed (or removed when empty).
void rewrite_metadata(const fs::path& path, const std::string& key, const std::string& value) {
  SafetensorsFile file = read_safetensors(path);
  if (value.empty()) {
    file.metadata.erase(key);
  } else {
    file.metadata[key] = value;
  }
  std::vector<TensorView> views;
  for (const Tensor& t : file.tensors) views.emplace_back(t.name, t.dtype, t.shape, t.bytes);
  write_safetensors(path, views, file.metadata);
}

TEST(Checkpoint, ReadRefusesMissingOrMalformedPositionFields) {
  const fs::path path = test_dir() / "ckpt.safetensors";
  Trained run(kShape, adam(), 1, 1);
  const auto refusal = [&](const std::string& key, const std::string& value) {
    save_checkpoint(path, run.model, *run.optimizer, run.kind, kPosition, kOptions);
    rewrite_metadata(path, key, value);
    const std::string message = error_of<DataError>([&] { read_checkpoint(path); });
    const std::string prefix = path.string() + ": not a valid ddpscope checkpoint: ";
    EXPECT_EQ(message.substr(0, prefix.size()), prefix);
    return message.substr(std::min(prefix.size(), message.size()));
  };
  EXPECT_EQ(refusal("epoch", ""), "its metadata has no \"epoch\"");
  EXPECT_EQ(refusal("epoch", "3.5"), "metadata \"epoch\" is \"3.5\", expected an integer >= 0");
  EXPECT_EQ(refusal("next_batch", "-1"), "metadata \"next_batch\" is \"-1\", expected an integer >= 0");
  EXPECT_EQ(refusal("global_step", "12x"), "metadata \"global_step\" is \"12x\", expected an integer >= 0");
  EXPECT_EQ(refusal("world_size", "0"), "metadata \"world_size\" is \"0\", expected an integer >= 1");
  EXPECT_EQ(refusal("world_size", "99999999999"),
            "metadata \"world_size\" is \"99999999999\", expected an integer >= 1");
  EXPECT_EQ(refusal("seed", "18446744073709551616"),
            "metadata \"seed\" is \"18446744073709551616\", expected an integer >= 0");
  // Far from wrapping negative as the resumed run adds its steps.
  EXPECT_EQ(refusal("global_step", "9223372036854775807"),
            "metadata \"global_step\" is \"9223372036854775807\", expected an integer >= 0 and at most "
            "9007199254740992");
  EXPECT_EQ(refusal("optimizer", ""), "its metadata has no \"optimizer\"");
  EXPECT_EQ(refusal("format", "ddpscope.checkpoint/2"),
            "its format is \"ddpscope.checkpoint/2\", expected \"ddpscope.checkpoint/1\"");
}

TEST(Checkpoint, EveryTruncationIsADataError) {
  const fs::path dir = test_dir();
  const fs::path path = dir / "ckpt.safetensors";
  Trained run({.input_dim = 2, .hidden_size = 3, .hidden_layers = 1, .output_dim = 1}, adam(), 1, 1);
  save_checkpoint(path, run.model, *run.optimizer, run.kind, kPosition, kOptions);
  const std::string bytes = read_text(path);
  const fs::path cut = dir / "cut.safetensors";
  for (std::size_t size = 0; size < bytes.size(); ++size) {
    std::ofstream(cut, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(size));
    const std::string message = error_of<DataError>([&] { read_checkpoint(cut); });
    ASSERT_EQ(message.rfind(cut.string() + ": not a valid safetensors file: ", 0), 0u) << size << ": " << message;
  }
}

std::vector<float> python_values(const MlpShape& shape) {
  // check_checkpoint.py's write-mlp: W_l[o, i] = (o * in + i) / 8 - l, b_l[o] = l - o / 4.
  std::vector<float> values;
  const std::vector<int64_t> widths = shape.widths();
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    for (int64_t k = 0; k < widths[l] * widths[l + 1]; ++k) values.push_back(static_cast<float>(k / 8.0 - l));
    for (int64_t o = 0; o < widths[l + 1]; ++o) values.push_back(static_cast<float>(l - o / 4.0));
  }
  return values;
}

TEST(Checkpoint, LoadsParametersWrittenByAnIndependentPythonWriter) {
  const fs::path dir = test_dir();
  for (const std::string dtype : {"F32", "F64"}) {
    const fs::path path = dir / (dtype + ".safetensors");
    run_python("write-mlp '" + path.string() + "' 3,5,5,2 --dtype " + dtype, dir);
    Mlp model(kShape);
    load_parameters(path, model);
    EXPECT_TRUE(same_bits(model.params(), python_values(kShape))) << dtype;
  }
}

std::string init_refusal(const fs::path& path, const MlpShape& shape = kShape) {
  Mlp model(shape);
  model.init_like_pytorch(3);
  const std::vector<float> before(model.params().begin(), model.params().end());
  const std::string message = error_of<UsageError>([&] { load_parameters(path, model); });
  EXPECT_TRUE(same_bits(model.params(), before)) << "a refused file changed the model";
  return message;
}

TEST(Checkpoint, LoadParametersRefusesAnotherShape) {
  const fs::path dir = test_dir();
  const fs::path path = dir / "weights.safetensors";
  run_python("write-mlp '" + path.string() + "' 4,5,5,2", dir);
  EXPECT_EQ(init_refusal(path),
            "--init-from " + path.string() +
                ": the file does not fit the model: tensor 'layers.0.weight' has shape [5, 4], the model expects "
                "[5, 3] (the model: --input-dim 3 --hidden-size 5 --hidden-layers 2 --output-dim 2)");
}

TEST(Checkpoint, LoadParametersListsTensorsTheModelLacks) {
  const fs::path dir = test_dir();
  const fs::path path = dir / "weights.safetensors";
  run_python("write-mlp '" + path.string() + "' 3,5,5,2 --extra head.weight", dir);
  EXPECT_EQ(init_refusal(path),
            "--init-from " + path.string() +
                ": the file does not fit the model: tensor 'head.weight' (F32 [2]) is in the file but not in the "
                "model (the model: --input-dim 3 --hidden-size 5 --hidden-layers 2 --output-dim 2; ddpscope names "
                "Linear layer l's parameters layers.<l>.weight [out, in] and layers.<l>.bias [out], l = 0..2, "
                "counting Linear layers only)");

  // An nn.Sequential state_dict names its Linear layers by module index, ReLUs included.
  const fs::path fewer = dir / "fewer.safetensors";
  run_python("write-mlp '" + fewer.string() + "' 3,5,2", dir);
  const std::string message = init_refusal(fewer);
  EXPECT_NE(message.find("tensor 'layers.1.weight' has shape [2, 5], the model expects [5, 5]; "), std::string::npos)
      << message;
  EXPECT_NE(message.find("tensor 'layers.2.bias' is missing (the model expects F32 [2])"), std::string::npos)
      << message;
}

TEST(Checkpoint, LoadParametersTakesACheckpointAndFinalParameters) {
  const fs::path dir = test_dir();
  Trained run(kShape, adam(), 1, 2);
  save_checkpoint(dir / "ckpt.safetensors", run.model, *run.optimizer, run.kind, kPosition, kOptions);
  save_parameters(dir / "final.safetensors", run.model, kOptions);
  for (const char* name : {"ckpt.safetensors", "final.safetensors"}) {
    Mlp model(kShape);
    load_parameters(dir / name, model);
    EXPECT_TRUE(same_bits(model.params(), run.model.params())) << name;
  }
  const SafetensorsFile final_file = read_safetensors(dir / "final.safetensors");
  EXPECT_EQ(final_file.tensors.size(), 6u);
  EXPECT_EQ(final_file.metadata,
            (std::map<std::string, std::string>{
                {"format", "pt"}, {"ddpscope_version", DDPSCOPE_VERSION}, {"config", R"({"input_dim":3,"lr":0.01})"}}));
}

TEST(Checkpoint, LoadParametersRefusesAMalformedFileAsData) {
  const fs::path path = test_dir() / "bad.safetensors";
  std::ofstream(path) << "not a safetensors file";
  Mlp model(kShape);
  const std::string message = error_of<DataError>([&] { load_parameters(path, model); });
  EXPECT_EQ(message.rfind(path.string() + ": not a valid safetensors file: ", 0), 0u) << message;
}

}  // namespace
}  // namespace ddp
