#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>

#include "base/stop_signal.h"
#include "cli.h"
#include "ddpscope/error.h"
#include "dist/world.h"

namespace {

// The rank mpirun (or srun) gave this process, 0 when started alone: errors that every
// rank raises alike (bad options or input data, a world that differs from the options)
// are printed once, by rank zero.
int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* value = std::getenv(name)) return std::atoi(value);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Before any thread starts, so that every thread inherits the block (base/stop_signal.h).
  ddp::take_stop_signals();
  // A file size limit (or quota) must fail a write with EFBIG, reported with the file's
  // name, not kill the process with SIGXFSZ halfway through a row.
  std::signal(SIGXFSZ, SIG_IGN);
  int code = 0;
  bool alike_on_every_rank = false;
  try {
    return ddp::run_cli(argc, argv);
  } catch (const ddp::Error& e) {
    code = static_cast<int>(e.code());
    // Bad options or data, and a stop on a signal (128 + signal), happen on every rank alike.
    alike_on_every_rank =
        e.code() == ddp::ExitCode::kUsage || e.code() == ddp::ExitCode::kData || static_cast<int>(e.code()) > 128;
    if (!alike_on_every_rank || launcher_rank() == 0) std::fprintf(stderr, "ddpscope: error: %s\n", e.what());
    if (static_cast<int>(e.code()) > 128) {
      ddp::StopSignals::end_quietly_with(code);
      ddp::leave_together_after_stop();
    }
  } catch (const std::exception& e) {
    code = static_cast<int>(ddp::ExitCode::kOther);
    std::fprintf(stderr, "ddpscope: error: %s\n", e.what());
  }
  // An error only this rank saw would leave the others waiting in a collective: end the job.
  if (!alike_on_every_rank) ddp::end_job_on_error(code);
  return code;
}
