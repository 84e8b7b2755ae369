#include "log/file_io.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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
  const std::filesystem::path temp = path.string() + ".tmp";
  set_file_in_progress(temp.c_str());  // a second Ctrl-C's exit removes it
  struct Done {
    ~Done() { set_file_in_progress(nullptr); }
  } done;
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(temp, "create");
  if (!write_all(fd, content) || ::fsync(fd) != 0) {
    const int saved = errno;
    ::close(fd);
    ::unlink(temp.c_str());
    errno = saved;
    fail(temp, "write");
  }
  if (::close(fd) != 0) {
    const int saved = errno;
    ::unlink(temp.c_str());
    errno = saved;
    fail(temp, "write");
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    ::unlink(temp.c_str());
    fail(path, "replace");
  }
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
