#pragma once
// CRC-32C (Castagnoli), the checksum TensorBoard's record format (TFRecord) puts around
// every record, and the mask TFRecord applies so that a CRC stored inside checksummed
// data does not checksum to a fixed value.
#include <cstdint>
#include <string_view>

namespace ddp {

uint32_t crc32c(std::string_view data);

// TFRecord's masking: rotate right by 15 bits, add a constant.
inline uint32_t mask_crc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

}  // namespace ddp
