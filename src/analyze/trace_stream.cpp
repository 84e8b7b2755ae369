#include "analyze/trace_stream.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "ddpscope/error.h"

namespace ddp {
namespace {

constexpr std::size_t kBufferBytes = std::size_t{1} << 18;

}  // namespace

TraceStream::TraceStream(std::string path, std::function<void(double)> progress)
    : path_(std::move(path)), packed_(kBufferBytes), buffer_(kBufferBytes), progress_(std::move(progress)) {
  struct stat info {};
  if (::stat(path_.c_str(), &info) != 0) {
    throw DataError(fmt::format("{}: cannot read it: {}", path_, std::strerror(errno)));
  }
  if (!S_ISREG(info.st_mode) && !S_ISFIFO(info.st_mode)) {
    throw DataError(fmt::format("{}: not a regular file or a pipe", path_));
  }
  file_bytes_ = info.st_size;
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw DataError(fmt::format("{}: cannot read it: {}", path_, std::strerror(errno)));
  // gzip or not, by its first two bytes (gzip's magic number), whatever the file's name.
  packed_length_ = read_file(packed_.data(), packed_.size());
  gzip_ = packed_length_ >= 2 && packed_[0] == 0x1f && packed_[1] == 0x8b;
  if (gzip_) inflater_.give(packed_.data(), packed_length_);
  next_ = end_ = buffer_.data();
}

TraceStream::~TraceStream() {
  if (fd_ >= 0) ::close(fd_);
}

std::size_t TraceStream::read_file(unsigned char* into, std::size_t count) {
  std::size_t done = 0;
  while (done < count && !file_ended_) {
    const ssize_t got = ::read(fd_, into + done, count - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw DataError(fmt::format("{}: cannot read it: {}", path_, std::strerror(errno)));
    if (got == 0) file_ended_ = true;
    done += static_cast<std::size_t>(got);
  }
  file_read_ += static_cast<int64_t>(done);
  if (progress_ && file_bytes_ > 0) progress_(static_cast<double>(file_read_) / static_cast<double>(file_bytes_));
  return done;
}

std::size_t TraceStream::read(char* into, std::size_t count) {
  const std::size_t buffered = std::min(count, static_cast<std::size_t>(end_ - next_));
  std::memcpy(into, next_, buffered);
  next_ += buffered;
  std::size_t done = buffered;
  // The rest straight into `into`: no copy through the buffer.
  while (done < count && !ended_) {
    const std::size_t got = read_into(into + done, count - done);
    consumed_ += got;
    done += got;
  }
  return done;
}

void TraceStream::skip_prefix(std::string_view prefix) {
  if (next_ == end_ && !refill()) return;
  if (std::string_view(next_, static_cast<std::size_t>(end_ - next_)).starts_with(prefix)) next_ += prefix.size();
}

void TraceStream::read_to_end() {
  next_ = end_;
  while (refill()) next_ = end_;
}

bool TraceStream::refill() {
  if (ended_) return false;
  consumed_ += static_cast<std::size_t>(end_ - buffer_.data());
  const std::size_t got = read_into(buffer_.data(), buffer_.size());
  next_ = buffer_.data();
  end_ = next_ + got;
  return got > 0;
}

std::size_t TraceStream::read_into(char* into, std::size_t count) {
  if (!gzip_) {
    // The bytes read to tell gzip from plain text come first.
    std::size_t got = std::min(count, packed_length_);
    std::memcpy(into, packed_.data(), got);
    std::memmove(packed_.data(), packed_.data() + got, packed_length_ - got);
    packed_length_ -= got;
    got += read_file(reinterpret_cast<unsigned char*>(into) + got, count - got);
    if (got == 0) ended_ = true;
    return got;
  }
  while (true) {
    const std::size_t got = inflater_.inflate(into, count, path_);
    if (got > 0) return got;
    if (inflater_.ignores_the_rest()) {
      ended_ = true;
      return 0;
    }
    if (file_ended_) {
      inflater_.check_complete(path_);
      ended_ = true;
      return 0;
    }
    // More compressed bytes, after those not consumed yet.
    const std::size_t keep = inflater_.unconsumed();
    std::memmove(packed_.data(), packed_.data() + packed_length_ - keep, keep);
    packed_length_ = keep + read_file(packed_.data() + keep, packed_.size() - keep);
    inflater_.give(packed_.data(), packed_length_);
  }
}

}  // namespace ddp
