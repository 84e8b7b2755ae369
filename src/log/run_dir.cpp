#include "log/run_dir.h"

#include <fmt/format.h>

#include <algorithm>
#include <system_error>

#include "base/error.h"

namespace ddp {

std::filesystem::path make_run_dir(const std::string& root, const std::string& name, const std::string& version) {
  namespace fs = std::filesystem;
  const fs::path parent = fs::path(root) / name;
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) {
    throw UsageError(fmt::format("--default-root-dir: cannot create '{}': {}", parent.string(), ec.message()));
  }
  std::string folder = version;
  if (folder.empty()) {
    int64_t next = 0;
    for (const fs::directory_entry& entry : fs::directory_iterator(parent, ec)) {
      const std::string n = entry.path().filename().string();
      if (n.rfind("version_", 0) == 0 && n.size() > 8 &&
          std::all_of(n.begin() + 8, n.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
        next = std::max<int64_t>(next, std::stoll(n.substr(8)) + 1);
      }
    }
    folder = fmt::format("version_{}", next);
  } else if (std::all_of(folder.begin(), folder.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
    folder = "version_" + folder;
  }
  const fs::path dir = parent / folder;
  fs::create_directories(dir, ec);
  if (ec) throw UsageError(fmt::format("--default-root-dir: cannot create '{}': {}", dir.string(), ec.message()));
  // Creating is not enough: a read-only folder that already exists must be refused too.
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
