#pragma once
// The safetensors format (huggingface/safetensors): an 8-byte little-endian header length
// N, N bytes of JSON header {"__metadata__": {string: string}, "<name>": {"dtype": "F32",
// "shape": [..], "data_offsets": [begin, end]}, ...}, then the tensors' raw little-endian
// bytes, contiguous and covering the rest of the file. Writing lays a file out byte for
// byte as the reference implementation does; reading refuses anything the reference
// would refuse, and more, with a DataError (exit 3) naming the file and the reason.
// Hand-written because the format's only implementation is Rust (with Python bindings): the
// format is small, the reader checks every offset before it trusts one, a checkpoint's errors
// must name the file and the tensor, and the reader is fuzzed (fuzz/safetensors_fuzz.cpp) and
// checked against an independent numpy reader and writer (tests/io).
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/check.h"
#include "ddpscope/error.h"

namespace ddp {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian and is copied without byte swapping");

// In the reference's order, which is also its order of alignment: files are written
// largest dtype first, so that every tensor's data is aligned to its element size.
enum class Dtype { kBool, kU8, kI8, kF8E5M2, kF8E4M3, kI16, kU16, kF16, kBF16, kI32, kU32, kF32, kF64, kI64, kU64 };

std::string_view dtype_name(Dtype dtype);  // "F32"
std::size_t dtype_size(Dtype dtype);       // bytes per element

template <class T>
constexpr Dtype dtype_of();
template <>
constexpr Dtype dtype_of<float>() {
  return Dtype::kF32;
}
template <>
constexpr Dtype dtype_of<double>() {
  return Dtype::kF64;
}
template <>
constexpr Dtype dtype_of<int32_t>() {
  return Dtype::kI32;
}
template <>
constexpr Dtype dtype_of<int64_t>() {
  return Dtype::kI64;
}

// A tensor to write; the bytes stay owned by the caller.
struct TensorView {
  std::string name;
  Dtype dtype = Dtype::kF32;
  std::vector<int64_t> shape;  // row-major; {} is a scalar
  std::span<const std::byte> bytes;

  template <class T>
  TensorView(std::string tensor_name, std::vector<int64_t> tensor_shape, std::span<const T> values)
      : name(std::move(tensor_name)),
        dtype(dtype_of<T>()),
        shape(std::move(tensor_shape)),
        bytes(std::as_bytes(values)) {}
  template <class T>
  TensorView(std::string tensor_name, std::vector<int64_t> tensor_shape, const std::vector<T>& values)
      : TensorView(std::move(tensor_name), std::move(tensor_shape), std::span<const T>(values)) {}
  template <class T>
  TensorView(std::string, std::vector<int64_t>, std::vector<T>&&) = delete;  // would dangle
  TensorView(std::string tensor_name, Dtype tensor_dtype, std::vector<int64_t> tensor_shape,
             std::span<const std::byte> tensor_bytes)
      : name(std::move(tensor_name)), dtype(tensor_dtype), shape(std::move(tensor_shape)), bytes(tensor_bytes) {}
};

// A tensor read from a file, with its own copy of the bytes.
struct Tensor {
  std::string name;
  Dtype dtype = Dtype::kF32;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;

  int64_t numel() const { return static_cast<int64_t>(bytes.size() / dtype_size(dtype)); }
  // The values as T; T must be the tensor's dtype (callers check dtype first and report a
  // mismatch in their own words, e.g. "layers.0.weight is F64, the model needs F32").
  template <class T>
  std::vector<T> values() const {
    DDP_CHECK_EQ(dtype, dtype_of<T>(), "Tensor::values<T> called with the wrong type");
    std::vector<T> out(bytes.size() / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), bytes.data(), bytes.size());
    return out;
  }
};

struct SafetensorsFile {
  std::map<std::string, std::string> metadata;
  std::vector<Tensor> tensors;  // in file order (by data offset)

  const Tensor* find(std::string_view name) const;  // nullptr when absent
};

// Writes atomically (temp file, fsync, rename, fsync of the folder). Tensors are laid out
// as the reference does: by dtype, largest first, then by name; "__metadata__" is written
// only when not empty. A tensor whose byte count disagrees with its shape, or two tensors
// with one name, are our own bug (DDP_CHECK).
void write_safetensors(const std::filesystem::path& path, const std::vector<TensorView>& tensors,
                       const std::map<std::string, std::string>& metadata);

// The file's bytes, exactly as write_safetensors writes them.
std::string serialize_safetensors(const std::vector<TensorView>& tensors,
                                  const std::map<std::string, std::string>& metadata);

// Reads and validates a whole file. Throws DataError "<path>: not a valid safetensors
// file: <reason>" for any malformation, and when the file cannot be read.
SafetensorsFile read_safetensors(const std::filesystem::path& path);

// The same on bytes in memory; `name_for_messages` stands for the path in messages.
SafetensorsFile parse_safetensors(std::span<const std::byte> bytes, std::string_view name_for_messages);

}  // namespace ddp
