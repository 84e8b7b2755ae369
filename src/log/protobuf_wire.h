#pragma once
// Protocol Buffers wire format, just the field kinds TensorBoard's Event and Summary
// messages need (varint, 64-bit, 32-bit, length-delimited), appended to a byte string.
//
// Encoded by hand rather than with libprotobuf: the TensorBoard logger writes five fields
// of two messages, which takes a few lines here, whereas libprotobuf would add a code
// generator and a library to every build for them. `protoc --decode_raw` in the tests is
// the independent check that the bytes are right.
#include <cstdint>
#include <string>
#include <string_view>

namespace ddp::protobuf {

void append_varint(std::string& out, uint64_t value);
void append_int64_field(std::string& out, int field, int64_t value);           // wire type 0
void append_double_field(std::string& out, int field, double value);           // wire type 1
void append_bytes_field(std::string& out, int field, std::string_view bytes);  // wire type 2: strings, messages
void append_float_field(std::string& out, int field, float value);             // wire type 5

}  // namespace ddp::protobuf
