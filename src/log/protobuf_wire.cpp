#include "log/protobuf_wire.h"

#include <bit>

namespace ddp::protobuf {
namespace {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

void append_tag(std::string& out, int field, WireType type) {
  append_varint(out, (static_cast<uint64_t>(field) << 3) | type);
}

// Fixed-width fields are little-endian on the wire.
template <typename T>
void append_little_endian(std::string& out, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i) out += static_cast<char>((value >> (8 * i)) & 0xFFu);
}

}  // namespace

void append_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out += static_cast<char>((value & 0x7Fu) | 0x80u);
    value >>= 7;
  }
  out += static_cast<char>(value);
}

void append_int64_field(std::string& out, int field, int64_t value) {
  append_tag(out, field, kVarint);
  append_varint(out, static_cast<uint64_t>(value));  // int64: negatives take ten bytes, as protobuf does
}

void append_double_field(std::string& out, int field, double value) {
  append_tag(out, field, kFixed64);
  append_little_endian(out, std::bit_cast<uint64_t>(value));
}

void append_bytes_field(std::string& out, int field, std::string_view bytes) {
  append_tag(out, field, kLengthDelimited);
  append_varint(out, bytes.size());
  out.append(bytes);
}

void append_float_field(std::string& out, int field, float value) {
  append_tag(out, field, kFixed32);
  append_little_endian(out, std::bit_cast<uint32_t>(value));
}

}  // namespace ddp::protobuf
