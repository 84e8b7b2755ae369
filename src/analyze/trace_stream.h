#pragma once
// A file read as RapidJSON's input stream, inflated as it is read when it is gzip
// (gzip_inflater.h); a plain file or a pipe is read as it is. The whole file is never in memory.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "analyze/gzip_inflater.h"

namespace ddp {

class TraceStream {
 public:
  using Ch = char;
  // Throws DataError naming the file when it cannot be opened. `progress` is called with the
  // share of the file read, now and then.
  explicit TraceStream(std::string path, std::function<void(double)> progress = {});
  ~TraceStream();
  TraceStream(const TraceStream&) = delete;
  TraceStream& operator=(const TraceStream&) = delete;

  // RapidJSON's stream concept (reading only): its names, not ours.
  // NOLINTBEGIN(readability-identifier-naming)
  char Peek() { return next_ < end_ || refill() ? *next_ : '\0'; }
  char Take() { return next_ < end_ || refill() ? *next_++ : '\0'; }
  std::size_t Tell() const { return consumed_ + static_cast<std::size_t>(next_ - buffer_.data()); }
  char* PutBegin() { return nullptr; }
  void Put(char) {}
  void Flush() {}
  std::size_t PutEnd(char*) { return 0; }
  // NOLINTEND(readability-identifier-naming)

  // Up to `count` bytes into `into`, fewer only at the end of the file: the reader in parts.
  std::size_t read(char* into, std::size_t count);

  // Past `prefix` where the file begins with it (a byte order mark); before anything is read.
  void skip_prefix(std::string_view prefix);

  // Reads on to the end: a damaged gzip member throws as refill does.
  void read_to_end();

  // Past spaces, tabs and line ends, a buffer at a time: Kineto indents every field, and
  // RapidJSON's own skipping takes a character per call.
  void skip_whitespace() {
    while (next_ < end_ || refill()) {
      while (next_ < end_ && (*next_ == ' ' || *next_ == '\n' || *next_ == '\r' || *next_ == '\t')) ++next_;
      if (next_ < end_) return;
    }
  }

 private:
  bool refill();  // false at the end; throws DataError on a damaged or truncated file
  std::size_t read_into(char* into, std::size_t count);           // 0 at the end; throws as refill
  std::size_t read_file(unsigned char* into, std::size_t count);  // the file's own bytes

  std::string path_;
  int fd_ = -1;
  bool gzip_ = false;
  GzipInflater inflater_;
  std::vector<unsigned char> packed_;  // gzip: compressed bytes read, not yet inflated
  std::size_t packed_length_ = 0;
  bool file_ended_ = false;
  std::vector<char> buffer_;
  const char* next_ = nullptr;
  const char* end_ = nullptr;
  std::size_t consumed_ = 0;  // bytes before the buffer (and those read around it)
  bool ended_ = false;
  int64_t file_bytes_ = 0;
  int64_t file_read_ = 0;
  std::function<void(double)> progress_;
};

}  // namespace ddp
