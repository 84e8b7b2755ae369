#pragma once
// Checkpoints and parameter files in safetensors format.
//
// A checkpoint holds, as tensors (all F32 unless said):
//   layers.<l>.weight [out, in], layers.<l>.bias [out]        l = 0..L-1, PyTorch's names
//   optimizer.<state>.layers.<l>.weight / .bias               the same shapes, one pair per
//                                                             state buffer (Adam: exp_avg,
//                                                             exp_avg_sq; SGD with momentum:
//                                                             momentum_buffer; plain SGD: none)
//   optimizer.step                                            I64, shape [] (a scalar, as
//                                                             torch.optim keeps state["step"])
// and as metadata (strings): format "ddpscope.checkpoint/1", ddpscope_version, config (the
// resolved options as a JSON object of strings), optimizer ("adam", "adamw", "sgd"),
// epoch, next_batch, global_step, world_size, seed (decimal integers) and rng (why the
// sampler state is just (seed, epoch, next_batch)).
//
// A parameters file (final.safetensors) holds only the layers.* tensors, with metadata
// format "pt" (the tensors are in PyTorch's layout), ddpscope_version and config, so
// safetensors.torch.load_file() gives a state_dict for an nn.Module whose Linear layers
// are named layers.0, layers.1, ...
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ddpscope/config.h"
#include "ddpscope/mlp.h"
#include "ddpscope/optimizer.h"
#include "io/safetensors.h"

namespace ddp {

inline constexpr const char* kCheckpointFormat = "ddpscope.checkpoint/1";

// Where training continues. The data's order and values are a pure function of
// (seed, epoch, index), so this is the whole of the sampler's and the data's state.
struct TrainingPosition {
  int64_t epoch = 0;        // the epoch to continue in
  int64_t next_batch = 0;   // micro-batches of that epoch already done (0 at an epoch boundary)
  int64_t global_step = 0;  // optimizer steps taken
  int world_size = 1;
  uint64_t seed = 0;
};

struct LoadedCheckpoint {
  std::filesystem::path path;  // for messages
  TrainingPosition position;
  std::map<std::string, std::string> metadata;
  SafetensorsFile file;
};

// Writes atomically (temp file beside `file`, fsync, rename, fsync the folder); the folder
// must exist. `optimizer_kind` is the configured one: restore_checkpoint compares it.
void save_checkpoint(const std::filesystem::path& file, const Mlp& model, Optimizer& optimizer,
                     OptimizerKind optimizer_kind, const TrainingPosition& position, const OptionTexts& config_options);

// Reads and checks that the file is a ddpscope checkpoint. DataError (exit 3) naming the
// file and the reason for a malformed safetensors file, a missing or foreign "format", or a
// missing or malformed position field. Does not compare with any model: restore does.
LoadedCheckpoint read_checkpoint(const std::filesystem::path& file);

// Copies the checkpoint's parameters into `model` and its optimizer state and step count
// into `optimizer`, bit for bit. UsageError (exit 2) when the checkpoint does not fit the
// configured run: another optimizer kind, or any tensor missing, extra, of another dtype
// (only F32 is taken: a resume must be exact) or of another shape, all named in one
// message. On error nothing has been modified.
void restore_checkpoint(const LoadedCheckpoint& checkpoint, Mlp& model, Optimizer& optimizer,
                        OptimizerKind optimizer_kind);

// --init-from: the model's layers.<l>.weight/.bias from any safetensors file (PyTorch's
// safetensors package, a ddpscope checkpoint or final.safetensors). optimizer.* tensors are
// ignored; any other tensor the model lacks is an error. F32 is copied exactly; F64 (a
// model.double() state_dict) is rounded to nearest F32; other dtypes are refused. DataError
// for a malformed file, UsageError naming every mismatch; on error the model is unchanged.
void load_parameters(const std::filesystem::path& file, Mlp& model);

// final.safetensors: the parameters only, with the metadata described above. Atomic.
void save_parameters(const std::filesystem::path& file, const Mlp& model, const OptionTexts& config_options);

}  // namespace ddp
