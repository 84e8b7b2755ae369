// The start-up hook: written private to the user, inert and chained without its settings, and
// what it saw in each process read back (Debian's python3-torch runs the scripts).
#include "script/python_hook.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>

#include "ddpscope/error.h"
#include "script/hook_source.h"
#include "support/run_command.h"

namespace ddp {
namespace {

namespace fs = std::filesystem;

const std::string kPython = "/usr/bin/python3";

std::string script(const std::string& name) { return std::string(DDPSCOPE_SOURCE_DIR) + "/tests/script/" + name; }

// The hook's variables as a shell prefix.
std::string with_hook(const fs::path& hook, const HookSettings& settings) {
  std::string prefix;
  for (const auto& [name, value] : hook_environment(hook, settings)) prefix += name + "='" + value + "' ";
  return prefix;
}

TEST(PythonHook, IsWrittenPrivateToTheUser) {
  const fs::path dir = testing::fresh_dir("hook_written");
  write_python_hook(dir / "hook");
  struct stat folder {};
  struct stat file {};
  ASSERT_EQ(stat((dir / "hook").c_str(), &folder), 0);
  ASSERT_EQ(stat((dir / "hook/sitecustomize.py").c_str(), &file), 0);
  EXPECT_EQ(folder.st_mode & 0777, 0700u);
  EXPECT_EQ(file.st_mode & 0777, 0600u);
  EXPECT_EQ(testing::read_text(dir / "hook/sitecustomize.py"), std::string(python_hook_source()));
}

TEST(PythonHook, ComesFirstOnTheUsersPythonpath) {
  ::setenv("PYTHONPATH", "/the/users/own", 1);
  const auto env = hook_environment("/run/hook", {.out = "/run/out", .max_steps = 7, .devices = 2});
  ::unsetenv("PYTHONPATH");
  const auto value = [&](const std::string& name) {
    for (const auto& [n, v] : env)
      if (n == name) return v;
    return std::string("(absent)");
  };
  EXPECT_EQ(value("PYTHONPATH"), "/run/hook:/the/users/own");
  EXPECT_EQ(value("DDPSCOPE_HOOK_OUT"), "/run/out");
  EXPECT_EQ(value("DDPSCOPE_MAX_STEPS"), "7");
  EXPECT_EQ(value("DDPSCOPE_DEVICES"), "2");
}

// Without its settings it does nothing but run the sitecustomize Python would have run.
TEST(PythonHook, RunsTheUsersOwnSitecustomizeAfterItself) {
  const fs::path dir = testing::fresh_dir("hook_chained");
  write_python_hook(dir / "hook");
  fs::create_directories(dir / "user");
  std::ofstream(dir / "user/sitecustomize.py") << "MARK = 'the user\\'s'\n";
  const std::string python_path = (dir / "hook").string() + ":" + (dir / "user").string();
  testing::CommandResult r = testing::run_command(
      "PYTHONPATH=" + python_path + " " + kPython + " -c 'import sitecustomize; print(sitecustomize.MARK)'", dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "the user's\n");
  HookSettings settings{.out = dir / "out"};
  fs::create_directories(settings.out);
  r = testing::run_command("PYTHONPATH=" + python_path + " DDPSCOPE_HOOK_OUT=" + settings.out.string() + " " + kPython +
                               " -c 'import sitecustomize; print(sitecustomize.MARK)'",
                           dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "the user's\n");
  EXPECT_TRUE(fs::is_empty(settings.out)) << "no optimizer stepped: nothing written";
}

TEST(PythonHook, TracesAPlainScriptAndCutsItAtMaxSteps) {
  const fs::path dir = testing::fresh_dir("hook_plain");
  write_python_hook(dir / "hook");
  const HookSettings settings{.out = dir / "out", .trace_steps = 3, .wait_steps = 1, .max_steps = 12};
  fs::create_directories(settings.out);
  const testing::CommandResult r =
      testing::run_command(with_hook(dir / "hook", settings) + kPython + " " + script("single_process.py"), dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<HookFacts> facts = read_hook_facts(settings.out);
  ASSERT_EQ(facts.size(), 1u);
  const HookFacts& f = facts[0];
  EXPECT_EQ(f.rank, 0);
  EXPECT_EQ(f.world_size, 1);
  EXPECT_EQ(f.steps, 12) << "the script's 30 steps, cut";
  EXPECT_EQ(f.cut_at, 12);
  ASSERT_TRUE(f.trace.has_value());
  EXPECT_TRUE(fs::exists(settings.out / *f.trace));
  EXPECT_FALSE(f.own_profiler);
  EXPECT_FALSE(f.lightning_asked.has_value());
  EXPECT_TRUE(f.errors.empty());
  EXPECT_EQ(f.python, kPython);
  EXPECT_TRUE(f.torch.starts_with("1.")) << f.torch;
}

TEST(PythonHook, AFileThatIsNotTheHooksIsNamed) {
  const fs::path dir = testing::fresh_dir("hook_bad_facts");
  std::ofstream(dir / "rank0.1.hook.json") << "{\"rank\": 0";
  try {
    (void)read_hook_facts(dir);
    FAIL() << "read";
  } catch (const DataError& e) {
    EXPECT_NE(std::string(e.what()).find((dir / "rank0.1.hook.json").string() + " is not the hook's facts"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ddp
