#include "log/crc32c.h"

#include <gtest/gtest.h>

#include <string>

namespace ddp {
namespace {

// Vectors from RFC 3720 (iSCSI), appendix B.4, and the common "123456789" check value.
TEST(Crc32cTest, KnownVectors) {
  EXPECT_EQ(crc32c(""), 0x00000000u);
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(std::string(32, '\x00')), 0x8A9136AAu);
  EXPECT_EQ(crc32c(std::string(32, '\xFF')), 0x62A8AB43u);
  std::string ascending, descending;
  for (int i = 0; i < 32; ++i) {
    ascending += static_cast<char>(i);
    descending += static_cast<char>(31 - i);
  }
  EXPECT_EQ(crc32c(ascending), 0x46DD794Eu);
  EXPECT_EQ(crc32c(descending), 0x113FDB5Cu);
}

// Expected values computed independently (Python) from TFRecord's definition:
// ((crc >> 15) | (crc << 17)) + 0xa282ead8, modulo 2^32.
TEST(Crc32cTest, MaskRotatesAndAddsTheConstant) {
  EXPECT_EQ(mask_crc32c(0x00000000u), 0xA282EAD8u);
  EXPECT_EQ(mask_crc32c(0xE3069283u), 0xC78AB0E5u);
  EXPECT_EQ(mask_crc32c(0x8A9136AAu), 0x0FD7FFFAu);
  EXPECT_EQ(mask_crc32c(0xFFFFFFFFu), 0xA282EAD7u);  // the addition wraps
}

}  // namespace
}  // namespace ddp
