#include "analyze/trace_stream.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "ddpscope/error.h"

namespace ddp {
namespace {

constexpr std::size_t kBufferBytes = std::size_t{1} << 18;

}  // namespace

TraceStream::TraceStream(std::string path, std::function<void(double)> progress)
    : path_(std::move(path)), buffer_(kBufferBytes), progress_(std::move(progress)) {
  struct stat info {};
  if (::stat(path_.c_str(), &info) != 0) {
    throw DataError(fmt::format("{}: cannot read it: {}", path_, std::strerror(errno)));
  }
  if (!S_ISREG(info.st_mode) && !S_ISFIFO(info.st_mode)) {
    throw DataError(fmt::format("{}: not a regular file or a pipe", path_));
  }
  file_bytes_ = info.st_size;
  file_ = gzopen(path_.c_str(), "rb");
  if (file_ == nullptr) throw DataError(fmt::format("{}: cannot read it: {}", path_, std::strerror(errno)));
  gzbuffer(file_, kBufferBytes);
  next_ = end_ = buffer_.data();
}

TraceStream::~TraceStream() {
  if (file_ != nullptr) gzclose(file_);
}

std::size_t TraceStream::read(char* into, std::size_t count) {
  const std::size_t buffered = std::min(count, static_cast<std::size_t>(end_ - next_));
  std::memcpy(into, next_, buffered);
  next_ += buffered;
  std::size_t done = buffered;
  // The rest straight from zlib into `into`: no copy through the buffer.
  while (done < count && !ended_) {
    const std::size_t got = inflate_into(into + done, count - done);
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
  const std::size_t got = inflate_into(buffer_.data(), buffer_.size());
  next_ = buffer_.data();
  end_ = next_ + got;
  return got > 0;
}

std::size_t TraceStream::inflate_into(char* into, std::size_t count) {
  const int got = gzread(file_, into, static_cast<unsigned>(std::min<std::size_t>(count, 1U << 30)));
  int code = Z_OK;
  const char* message = gzerror(file_, &code);
  // zlib reports a gzip file cut short as Z_BUF_ERROR once it reaches the end.
  if (got < 0 || (code != Z_OK && code != Z_STREAM_END)) {
    throw DataError(fmt::format("{}: damaged or truncated (gzip: {})", path_,
                                code == Z_BUF_ERROR ? "unexpected end of file" : message));
  }
  if (progress_ && file_bytes_ > 0) progress_(static_cast<double>(gzoffset(file_)) / static_cast<double>(file_bytes_));
  if (got == 0) ended_ = true;
  return static_cast<std::size_t>(got);
}

}  // namespace ddp
