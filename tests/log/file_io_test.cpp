#include "log/file_io.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace ddp {
namespace {

std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("ddpscope_file_io_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::string read(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(FileIo, PiecesAreWrittenInOrderAsOneFile) {
  const auto file = fresh_dir("pieces") / "out.json";
  write_file_atomically(file, [](const PieceSink& sink) {
    sink("[1,");
    sink("2,");
    sink("3]");
  });
  EXPECT_EQ(read(file), "[1,2,3]");
  EXPECT_FALSE(std::filesystem::exists(file.string() + ".tmp"));
}

TEST(FileIo, AProducerThatFailsLeavesTheOldFileAndNoTemporaryFile) {
  const auto file = fresh_dir("failing") / "out.json";
  write_file_atomically(file, "old");
  EXPECT_THROW(write_file_atomically(file,
                                     [](const PieceSink& sink) {
                                       sink("half of the new");
                                       throw std::runtime_error("the producer failed");
                                     }),
               std::runtime_error);
  EXPECT_EQ(read(file), "old");
  EXPECT_FALSE(std::filesystem::exists(file.string() + ".tmp"));
}

}  // namespace
}  // namespace ddp
