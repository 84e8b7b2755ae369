#pragma once
// The readers under fuzzing take paths: each input is written to one file per process.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace ddp::fuzz {

inline const std::string& input_path(const char* target) {
  static const std::string path = [&] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/ddpscope_" + target + "_" +
           std::to_string(::getpid());
  }();
  static const bool registered = [] { return std::atexit([] { std::remove(input_path("").c_str()); }) == 0; }();
  (void)registered;
  return path;
}

inline const std::string& write_input(const char* target, const uint8_t* data, size_t size) {
  const std::string& path = input_path(target);
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr || std::fwrite(data, 1, size, file) != size || std::fclose(file) != 0) {
    std::perror(path.c_str());
    std::abort();
  }
  return path;
}

}  // namespace ddp::fuzz
