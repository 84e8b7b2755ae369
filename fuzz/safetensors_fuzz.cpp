// The safetensors reader on arbitrary bytes. Refusing is fine (a DataError); anything
// else escaping, a sanitizer report, or a file that reads back differently after being
// written again is a finding.
#include <cstddef>
#include <cstdint>

#include "base/check.h"
#include "ddpscope/error.h"
#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ddp::SafetensorsFile file;
  try {
    file = ddp::parse_safetensors({reinterpret_cast<const std::byte*>(data), size}, "fuzz input");
  } catch (const ddp::DataError&) {
    return 0;
  }
  // What was accepted survives a round trip through our own writer.
  std::vector<ddp::TensorView> views;
  for (const ddp::Tensor& t : file.tensors) views.emplace_back(t.name, t.dtype, t.shape, t.bytes);
  const std::string bytes = ddp::serialize_safetensors(views, file.metadata);
  const ddp::SafetensorsFile again =
      ddp::parse_safetensors({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()}, "round trip");
  DDP_CHECK(again.metadata == file.metadata);
  DDP_CHECK(again.tensors.size() == file.tensors.size());
  for (const ddp::Tensor& t : file.tensors) {
    const ddp::Tensor* u = again.find(t.name);
    DDP_CHECK(u != nullptr && u->dtype == t.dtype && u->shape == t.shape && u->bytes == t.bytes);
  }
  return 0;
}
