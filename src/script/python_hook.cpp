#include "script/python_hook.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ddpscope/error.h"
#include "io/json_fields.h"
#include "log/file_io.h"
#include "script/hook_source.h"

namespace ddp {
namespace {

using json_fields::Json;
using json_fields::read;
using json_fields::read_optional;
using json_fields::read_strings;

HookFacts facts_of(const Json& j, const std::string& where) {
  HookFacts f;
  f.rank = static_cast<int>(read_optional<int64_t>(j, "rank", where).value_or(0));
  if (const auto size = read_optional<int64_t>(j, "world_size", where)) f.world_size = static_cast<int>(*size);
  f.pid = static_cast<int>(read<int64_t>(j, "pid", where));
  f.steps = read<int64_t>(j, "steps", where);
  f.trace = read_optional<std::string>(j, "trace", where);
  f.own_profiler = read<bool>(j, "own_profiler", where);
  f.own_traces = read_strings(j, "own_traces", where);
  if (const Json& lightning = json_fields::member(j, "lightning", where); !lightning.is_null()) {
    const Json& asked = json_fields::member(lightning, "asked_devices", where + " lightning");
    f.lightning_asked = asked.is_string() ? asked.get<std::string>() : asked.dump();
    const Json& used = json_fields::member(lightning, "used_devices", where + " lightning");
    if (used.is_number_integer()) f.lightning_used = used.get<int>();
  }
  f.batch_size = read_optional<int64_t>(j, "batch_size", where);
  f.micro_batches = read<int64_t>(j, "micro_batches", where);
  f.cut_at = read_optional<int64_t>(j, "cut_at", where);
  f.errors = read_strings(j, "errors", where);
  f.python = read_optional<std::string>(j, "python", where).value_or("");
  f.torch = read_optional<std::string>(j, "torch", where).value_or("");
  return f;
}

}  // namespace

void write_python_hook(const std::filesystem::path& folder) {
  std::filesystem::create_directories(folder);
  std::filesystem::permissions(folder, std::filesystem::perms::owner_all);
  const std::filesystem::path file = folder / "sitecustomize.py";
  write_file_atomically(file, python_hook_source());
  std::filesystem::permissions(file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
}

std::vector<std::pair<std::string, std::string>> hook_environment(const std::filesystem::path& folder,
                                                                  const HookSettings& s) {
  const char* user_path = std::getenv("PYTHONPATH");
  std::string path = folder.string();
  if (user_path != nullptr && *user_path != '\0') path += std::string(":") + user_path;
  std::vector<std::pair<std::string, std::string>> env = {
      {"PYTHONPATH", path},
      {"DDPSCOPE_HOOK_OUT", s.out.string()},
      {"DDPSCOPE_TRACE_STEPS", std::to_string(s.trace_steps)},
      {"DDPSCOPE_WAIT_STEPS", std::to_string(s.wait_steps)},
      {"DDPSCOPE_MAX_STEPS", std::to_string(s.max_steps)},
      {"DDPSCOPE_DEVICES", s.devices ? std::to_string(*s.devices) : ""}};
  return env;
}

std::vector<HookFacts> read_hook_facts(const std::filesystem::path& out) {
  std::vector<HookFacts> facts;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(out, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with("rank") || !name.ends_with(".hook.json")) continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    try {
      facts.push_back(facts_of(Json::parse(text.str()), entry.path().string()));
    } catch (const nlohmann::json::exception& e) {
      throw DataError(fmt::format("{} is not the hook's facts: {}", entry.path().string(), e.what()));
    }
  }
  std::sort(facts.begin(), facts.end(), [](const HookFacts& a, const HookFacts& b) { return a.rank < b.rank; });
  return facts;
}

}  // namespace ddp
