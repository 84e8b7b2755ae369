#pragma once
// The seed's question answered for a user's own script: `ddpscope doctor -- COMMAND` runs the
// command, unmodified, at each device count with the start-up hook (script_run.h), reads each
// run's traces (analyze/), and answers with the doctor's own result (doctor/doctor_result.h):
// the runs side by side, where a step goes at each count and what more devices add, the
// findings and predictions of the largest run (fitted across the runs), doctor.json,
// report.html and each run's merged trace. `ddpscope analyze -- COMMAND` runs it once, as it is.
#include <cstdio>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "analyze/trace_analysis.h"
#include "script/script_run.h"

namespace ddp {

struct ScriptRequest {
  std::vector<std::string> command;  // as typed after --
  std::vector<int> devices;          // increasing, distinct, >= 1
  int trace_steps = 10;              // optimizer steps traced, after a warm-up
  int64_t max_steps = 0;             // end each run after this many optimizer steps; 0: run to the end
  std::filesystem::path dir;         // this doctor's folder: devices_<n>/ per run, hook/
  std::string ddpscope_command;      // as typed, for "Reproduce"
};

// The hook's schedule for a run of at most max_steps (0: no limit): the steps skipped before
// tracing, so that the traced steps end before the run does.
int wait_steps_for(int trace_steps, int64_t max_steps);

// Runs, reads and answers; prints the runs' progress and the answer to out, writes doctor.json,
// report.html and the merged traces into request.dir. Returns the exit code: 0, 1 where a run
// failed (the others still compared), 128 + signal where a stop signal ended it. UsageError
// where the command's devices cannot be set (device_count.h).
int run_script_doctor(const ScriptRequest& request, std::FILE* out);

// analyze -- COMMAND: one run as the command is (its own device count), in dir; its traces
// read. Error naming the run where it failed or traced nothing.
TraceAnalysis analyze_script(const std::vector<std::string>& command, int trace_steps, int64_t max_steps,
                             const std::filesystem::path& dir);

}  // namespace ddp
