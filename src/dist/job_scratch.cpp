#include "dist/job_scratch.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "ddpscope/error.h"

namespace ddp {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPrefix = "ddpscope-job.";

fs::path scratch_base() {
  if (::access("/dev/shm", W_OK | X_OK) == 0) return "/dev/shm";
  const char* tmpdir = std::getenv("TMPDIR");
  return tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp";
}

// A launcher is alive while its pid is (a reused pid keeps a folder until that process ends).
bool launcher_alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

void remove_folders_of_dead_launchers(const fs::path& base) {
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(base, error)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(kPrefix)) continue;
    char* end = nullptr;
    const long pid = std::strtol(name.c_str() + kPrefix.size(), &end, 10);
    if (*end != '\0' || pid <= 0 || (pid != ::getpid() && launcher_alive(static_cast<pid_t>(pid)))) continue;
    fs::remove_all(entry.path(), error);  // another launch may be removing it too
  }
}

}  // namespace

JobScratch::JobScratch() {
  const fs::path base = scratch_base();
  remove_folders_of_dead_launchers(base);
  path_ = (base / fmt::format("{}{}", kPrefix, ::getpid())).string();
  std::error_code error;
  if (!fs::create_directory(path_, error) || error) {
    throw DistributedError(fmt::format("cannot create the job's folder for Open MPI's files '{}': {}", path_,
                                       error ? error.message() : "it exists"));
  }
  fs::permissions(path_, fs::perms::owner_all, error);
}

JobScratch::~JobScratch() {
  std::error_code ignored;
  fs::remove_all(path_, ignored);
}

std::vector<std::string> JobScratch::mpirun_args() const {
  return {"--mca", "orte_tmpdir_base", path_, "--mca", "btl_vader_backing_directory", path_};
}

}  // namespace ddp
