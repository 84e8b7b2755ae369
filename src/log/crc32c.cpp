#include "log/crc32c.h"

#include <array>

namespace ddp {
namespace {

// Hand-written rather than linked: no C++ library in our Debian dependency set provides
// CRC-32C, and a byte-at-a-time table loop is a few lines and fast enough for the few
// kilobytes a logger writes per epoch. 0x82F63B78 is the Castagnoli polynomial, reflected.
constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t crc = i;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? 0x82F63B78u : 0u);
    table[i] = crc;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = make_table();

}  // namespace

uint32_t crc32c(std::string_view data) {
  uint32_t crc = 0xFFFFFFFFu;
  for (const char c : data) crc = kTable[(crc ^ static_cast<uint8_t>(c)) & 0xFFu] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFFu;
}

}  // namespace ddp
