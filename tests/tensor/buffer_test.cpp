#include "ddpscope/buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <type_traits>
#include <utility>

namespace ddp {
namespace {

bool is_aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 64 == 0; }

TEST(AlignedBufferTest, AlignedAndZeroInitialised) {
  // Sizes that are and are not a multiple of the 16 floats in 64 bytes.
  for (std::size_t size : {1u, 15u, 16u, 17u, 1000u, 134657u}) {
    Buffer buffer(size);
    ASSERT_EQ(buffer.size(), size);
    EXPECT_TRUE(is_aligned(buffer.data())) << "size " << size;
    for (std::size_t i = 0; i < size; ++i) ASSERT_EQ(buffer[i], 0.0f) << "size " << size << " at " << i;
    EXPECT_EQ(buffer.span().size(), size);
  }
  AlignedBuffer<double> doubles(7);
  EXPECT_TRUE(is_aligned(doubles.data()));
  EXPECT_EQ(doubles[6], 0.0);
}

TEST(AlignedBufferTest, EmptyBufferHasNoStorage) {
  Buffer empty;
  EXPECT_EQ(empty.size(), 0u);
  EXPECT_EQ(empty.data(), nullptr);
  Buffer zero(0);
  EXPECT_EQ(zero.data(), nullptr);
  zero.zero();  // a no-op, not a crash
}

TEST(AlignedBufferTest, ZeroClearsContents) {
  Buffer buffer(33);
  for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<float>(i + 1);
  buffer.zero();
  for (std::size_t i = 0; i < buffer.size(); ++i) ASSERT_EQ(buffer[i], 0.0f);
}

TEST(AlignedBufferTest, MoveTransfersStorage) {
  static_assert(!std::is_copy_constructible_v<Buffer>);
  static_assert(!std::is_copy_assignable_v<Buffer>);
  static_assert(std::is_nothrow_move_constructible_v<Buffer>);

  Buffer a(20);
  a[3] = 4.5f;
  float* storage = a.data();

  Buffer b(std::move(a));
  EXPECT_EQ(b.data(), storage);
  EXPECT_EQ(b.size(), 20u);
  EXPECT_EQ(b[3], 4.5f);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT(bugprone-use-after-move): moved-from state is specified
  EXPECT_EQ(a.size(), 0u);

  Buffer c(5);
  c = std::move(b);
  EXPECT_EQ(c.data(), storage);
  EXPECT_EQ(c.size(), 20u);
  EXPECT_EQ(c[3], 4.5f);
}

}  // namespace
}  // namespace ddp
