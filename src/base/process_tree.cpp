#include "base/process_tree.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace ddp {
namespace {

// The parent field of /proc/<pid>/stat: "pid (comm) state ppid ..."; comm may hold spaces
// and parentheses, so parse after the last ')'.
pid_t parent_of(const std::filesystem::path& stat_file) {
  std::ifstream in(stat_file);
  std::string text;
  std::getline(in, text);
  const std::size_t close = text.rfind(')');
  if (close == std::string::npos || close + 4 > text.size()) return -1;
  return static_cast<pid_t>(std::strtol(text.c_str() + close + 4, nullptr, 10));
}

}  // namespace

std::vector<pid_t> descendants(pid_t root) {
  std::multimap<pid_t, pid_t> children;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t parent = parent_of(entry.path() / "stat");
    if (parent > 0) children.emplace(parent, static_cast<pid_t>(std::stol(name)));
  }
  std::vector<pid_t> out;
  std::vector<pid_t> frontier = {root};
  while (!frontier.empty()) {
    std::vector<pid_t> next;
    for (const pid_t pid : frontier) {
      const auto [begin, end] = children.equal_range(pid);
      for (auto it = begin; it != end; ++it) {
        out.push_back(it->second);
        next.push_back(it->second);
      }
    }
    frontier = std::move(next);
  }
  return out;
}

std::string executable_of(pid_t pid) {
  std::error_code error;
  const auto target = std::filesystem::read_symlink("/proc/" + std::to_string(pid) + "/exe", error);
  return error ? std::string() : target.string();
}

}  // namespace ddp
