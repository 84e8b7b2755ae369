#include "log/run_dir.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <system_error>

#include "ddpscope/error.h"

namespace ddp {
namespace {

namespace fs = std::filesystem;

bool all_digits(const std::string& text) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

// One more than the highest version_<n> in parent: where the search for a free one starts.
int64_t next_version(const fs::path& parent) {
  int64_t next = 0;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(parent, ec)) {
    const std::string n = entry.path().filename().string();
    if (n.rfind("version_", 0) == 0 && all_digits(n.substr(8)) && n.size() <= 8 + 18) {  // fits int64
      next = std::max<int64_t>(next, std::stoll(n.substr(8)) + 1);
    }
  }
  return next;
}

// Creates dir itself (not its parents); false when it exists already, as a folder or a file.
bool create_exclusively(const fs::path& dir) {
  std::error_code ec;
  const bool created = fs::create_directory(dir, ec);
  if (ec == std::errc::file_exists) return false;
  if (ec) throw UsageError(fmt::format("--default-root-dir: cannot create '{}': {}", dir.string(), ec.message()));
  return created;
}

// Whether this process now holds dir's lock, which it keeps until it exits (the kernel
// releases a flock however the process ends): a second run that names the same folder is
// refused while the first writes it. The lock file stays beside the folder, which --overwrite
// removes.
bool lock_run_dir(const fs::path& dir) {
  static std::mutex mutex;
  static std::set<std::string> held;  // flock conflicts between two descriptors of one process too
  const std::lock_guard<std::mutex> guard(mutex);
  const fs::path lock = dir.parent_path() / fmt::format(".{}.lock", dir.filename().string());
  if (held.count(lock.string()) > 0) return true;
  const int fd = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw UsageError(fmt::format("--default-root-dir: cannot create '{}': {}", lock.string(), std::strerror(errno)));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return false;
  }
  held.insert(lock.string());  // its descriptor stays open on purpose
  return true;
}

[[noreturn]] void refuse_busy(const fs::path& dir) {
  throw UsageError(
      fmt::format("--version: '{}' is being written by another run that is still going; wait for it to end or choose "
                  "another --version",
                  dir.string()));
}

}  // namespace

fs::path make_run_dir(const std::string& root, const std::string& name, const std::string& version, bool overwrite) {
  const fs::path parent = fs::path(root) / name;
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) {
    throw UsageError(fmt::format("--default-root-dir: cannot create '{}': {}", parent.string(), ec.message()));
  }
  fs::path dir;
  if (version.empty()) {
    // Another run may take the same number between the scan and the creation: then the
    // creation fails and the next number is tried.
    for (int64_t n = next_version(parent);; ++n) {
      dir = parent / fmt::format("version_{}", n);
      if (create_exclusively(dir) && lock_run_dir(dir)) break;
    }
  } else {
    dir = parent / (all_digits(version) ? "version_" + version : version);
    if (!lock_run_dir(dir)) refuse_busy(dir);
    if (!create_exclusively(dir)) {
      if (!overwrite) {
        throw UsageError(
            fmt::format("--version: '{}' exists already; choose another, omit --version for the next "
                        "free one, or pass --overwrite",
                        dir.string()));
      }
      fs::remove_all(dir, ec);
      if (ec) throw UsageError(fmt::format("--overwrite: cannot remove '{}': {}", dir.string(), ec.message()));
      if (!create_exclusively(dir)) {
        throw UsageError(
            fmt::format("--overwrite: another run created '{}' while it was being replaced", dir.string()));
      }
    }
  }
  // Creating is not enough: a read-only folder must be refused too.
  const fs::path probe = dir / ".ddpscope-write-test";
  if (FILE* f = std::fopen(probe.c_str(), "w")) {
    std::fclose(f);
    fs::remove(probe, ec);
  } else {
    throw UsageError(fmt::format("--default-root-dir: cannot write into '{}'", dir.string()));
  }
  return dir;
}

}  // namespace ddp
