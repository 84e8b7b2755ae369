// own_executable(): /proc/self/exe, unless a bundle's wrapper named itself in
// DDPSCOPE_EXECUTABLE (bench/gpu/pack.sh runs programs through their own loader).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "base/spawn.h"

namespace ddp {
namespace {

TEST(OwnExecutable, IsThisTestBinaryWhenNoWrapperNamesItself) {
  unsetenv("DDPSCOPE_EXECUTABLE");
  EXPECT_EQ(std::filesystem::path(own_executable()).filename(), "base_own_executable_test");
}

TEST(OwnExecutable, IsTheWrapperThatNamedItself) {
  setenv("DDPSCOPE_EXECUTABLE", "/bundle/bin/ddpscope", 1);
  EXPECT_EQ(own_executable(), "/bundle/bin/ddpscope");
  setenv("DDPSCOPE_EXECUTABLE", "", 1);  // empty: as if unset
  EXPECT_EQ(std::filesystem::path(own_executable()).filename(), "base_own_executable_test");
  unsetenv("DDPSCOPE_EXECUTABLE");
}

}  // namespace
}  // namespace ddp
