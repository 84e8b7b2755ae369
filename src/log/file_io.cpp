#include "log/file_io.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "base/stop_signal.h"
#include "ddpscope/error.h"

namespace ddp {
namespace {

[[noreturn]] void fail(const std::filesystem::path& path, std::string_view action) {
  throw Error(ExitCode::kOther, fmt::format("cannot {} '{}': {}", action, path.string(), std::strerror(errno)));
}

// Writes everything or returns false with errno set (a full disk or a file size limit can
// make a write short, and the next one fail).
bool write_all(int fd, std::string_view content) {
  while (!content.empty()) {
    const ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    content.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

void write_file_atomically(const std::filesystem::path& path, std::string_view content) {
  write_file_atomically(path, [&](const PieceSink& sink) { sink(content); });
}

void write_file_atomically(const std::filesystem::path& path, const std::function<void(const PieceSink&)>& produce) {
  const std::filesystem::path temp = path.string() + ".tmp";
  set_file_in_progress(temp.c_str());  // a second Ctrl-C's exit removes it
  // Until renamed into place, a failure (a write's, or the producer's) removes the temporary file.
  struct Temp {
    const std::filesystem::path& name;
    int fd = -1;
    bool placed = false;
    ~Temp() {
      const int saved = errno;
      if (fd >= 0) ::close(fd);
      if (!placed) ::unlink(name.c_str());
      set_file_in_progress(nullptr);
      errno = saved;
    }
  } file{temp};
  file.fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (file.fd < 0) fail(temp, "create");
  produce([&](std::string_view piece) {
    if (!write_all(file.fd, piece)) fail(temp, "write");
  });
  if (::fsync(file.fd) != 0) fail(temp, "write");
  const int fd = std::exchange(file.fd, -1);
  if (::close(fd) != 0) fail(temp, "write");
  if (::rename(temp.c_str(), path.c_str()) != 0) fail(path, "replace");
  file.placed = true;
  const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : ".";
  const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

void append_to_file(const std::filesystem::path& path, std::string_view content) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) fail(path, "open for appending");
  // A failed append is cut back to the old end, so the file never ends in a torn row or
  // record that later readers choke on, and the caller can retry the same bytes.
  const off_t old_size = ::lseek(fd, 0, SEEK_END);
  if (!write_all(fd, content)) {
    const int saved = errno;
    if (old_size >= 0) (void)::ftruncate(fd, old_size);
    ::close(fd);
    errno = saved;
    fail(path, "write");
  }
  if (::close(fd) != 0) fail(path, "write");
}

}  // namespace ddp
