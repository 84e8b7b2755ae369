#include <cstdio>
#include <exception>

#include "base/error.h"
#include "cli.h"

int main(int argc, char** argv) {
  try {
    return ddp::run_cli(argc, argv);
  } catch (const ddp::Error& e) {
    std::fprintf(stderr, "ddpscope: error: %s\n", e.what());
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ddpscope: error: %s\n", e.what());
    return static_cast<int>(ddp::ExitCode::kOther);
  }
}
