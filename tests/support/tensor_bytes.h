#pragma once
// The tensors of a safetensors file by name, as bytes: two checkpoints or final files are
// bit-identical exactly when these compare equal.
#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace ddp::testing {

inline std::map<std::string, std::vector<std::byte>> tensor_bytes(const std::filesystem::path& file) {
  std::map<std::string, std::vector<std::byte>> out;
  for (const Tensor& t : read_safetensors(file).tensors) out[t.name] = t.bytes;
  return out;
}

}  // namespace ddp::testing
