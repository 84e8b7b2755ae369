#pragma once
// Inflates gzip text a buffer at a time: ISA-L's igzip where the build found it (several
// times zlib's speed on x86-64 and Arm), else zlib. Members follow one another as gzip
// writes them; what follows the last member and is no gzip header is ignored, as zlib and
// gunzip do.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace ddp {

class GzipInflater {
 public:
  GzipInflater();
  ~GzipInflater();
  GzipInflater(const GzipInflater&) = delete;
  GzipInflater& operator=(const GzipInflater&) = delete;

  // The compressed bytes to inflate next; they must stay until consumed.
  void give(const unsigned char* bytes, std::size_t count);
  bool needs_input() const;  // all given bytes consumed
  // How many of the bytes given last are not consumed yet (the last ones): give them again,
  // followed by more, when inflate() returns 0 without needing input.
  std::size_t unconsumed() const;
  // Up to `count` inflated bytes into `into`. Returns how many (0 with needs_input() when it
  // wants more, or at the end); throws DataError naming `path` on damage.
  std::size_t inflate(char* into, std::size_t count, const std::string& path);
  // Whether a member ended and what follows it is no gzip member: the rest is not read.
  bool ignores_the_rest() const;
  // Called at the end of the file: throws DataError ("unexpected end of file") when a member
  // is cut short.
  void check_complete(const std::string& path) const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace ddp
