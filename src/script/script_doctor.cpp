#include "script/script_doctor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "base/stop_signal.h"
#include "ddpscope/error.h"
#include "doctor/command_line.h"
#include "doctor/report_html.h"
#include "log/file_io.h"
#include "log/gzip.h"

namespace ddp {
namespace {

// The hook skips this many optimizer steps, then one of warm-up, before it traces.
constexpr int kWaitSteps = 4;
// The hook's exit code where the script cannot be made to use the devices asked.
constexpr int kNoDeviceControl = 86;

std::string label_of(int devices) { return fmt::format("devices={}", devices); }

// Why a run gave no traces, in words: its own error first.
std::string failure_of(const ScriptRun& run) {
  const std::string tail = run.stderr_tail.empty() ? "" : ":\n" + run.stderr_tail;
  if (run.stopped) return fmt::format("stopped by a signal (exit {}){}", run.exit_code, tail);
  if (run.exit_code != 0) return fmt::format("exited {}{}", run.exit_code, tail);
  if (run.stderr_tail.find("No module named 'torch'") != std::string::npos)
    return "its Python has no torch (No module named 'torch'): ddpscope traces PyTorch and Lightning scripts" + tail;
  int64_t steps = 0;
  for (const HookFacts& f : run.ranks) steps = std::max(steps, f.steps);
  if (steps == 0) {
    return "no process of it stepped a torch optimizer, so there is no training step to trace (a script that trains "
           "with torch.optim, run by a Python that takes PYTHONPATH)" +
           tail;
  }
  return fmt::format(
      "its {} optimizer step{} ended before the hook's trace did (it skips {} and warms up on 1): run more steps, or "
      "fewer with --trace-steps",
      steps, steps == 1 ? "" : "s", kWaitSteps);
}

// The traces the run left, each with its rank: the hook's, or a profiler's of the script's own.
std::vector<std::pair<TraceInput, int>> traces_of(const ScriptRun& run) {
  std::vector<std::pair<TraceInput, int>> out;
  std::vector<int> seen;
  for (const HookFacts& f : run.ranks) {
    std::vector<std::string> files = f.own_traces;
    if (f.trace) files.push_back((run.folder / *f.trace).string());
    if (files.empty()) continue;
    if (std::find(seen.begin(), seen.end(), f.rank) != seen.end()) {
      throw DataError(
          fmt::format("two processes of it called themselves rank {} ({}): each process of a job needs a "
                      "rank of its own (torch.distributed's, or RANK from its launcher)",
                      f.rank, run.folder.string()));
    }
    seen.push_back(f.rank);
    for (const std::string& file : files) out.push_back({TraceInput{file, false}, f.rank});
  }
  return out;
}

// The run's traces, read as one job. DataError where there are none.
TraceJob job_of(const ScriptRun& run) {
  const std::vector<std::pair<TraceInput, int>> traces = traces_of(run);
  if (traces.empty()) throw DataError(failure_of(run));
  std::vector<TraceInput> files;
  std::map<std::string, int> ranks;
  for (const auto& [file, rank] : traces) {
    files.push_back(file);
    ranks[file.path] = rank;
  }
  return read_job(files, ranks);
}

// What a run says of the devices it used, when ddpscope set them.
std::optional<std::string> override_note(const ScriptRun& run) {
  if (run.devices == 0) return std::nullopt;  // analyze: the command as it is
  const std::string n = std::to_string(run.devices);
  switch (run.command.control) {
    case DeviceControl::kPlaceholder:
      return std::nullopt;  // the user's own {devices}
    case DeviceControl::kTorchrun:
      if (run.command.asked == n) return std::nullopt;
      return fmt::format("your command asks torchrun {} {}; this run used {}", run.command.option, run.command.asked,
                         n);
    case DeviceControl::kLightning:
      for (const HookFacts& f : run.ranks) {
        if (f.lightning_asked && *f.lightning_asked != n)
          return fmt::format("your script asks devices={}; this run used {}", *f.lightning_asked, n);
      }
      return std::nullopt;
  }
  return std::nullopt;
}

// Samples of all devices per optimizer step, where the hook saw the batch (Lightning): the batch
// times the micro-batches per step (accumulation) times the devices.
double samples_per_step(const ScriptRun& run, const RunRecord& record) {
  for (const HookFacts& f : run.ranks) {
    if (f.batch_size && f.steps > 0 && f.micro_batches > 0) {
      return static_cast<double>(*f.batch_size) * static_cast<double>(f.micro_batches) / static_cast<double>(f.steps) *
             static_cast<double>(record.devices);
    }
  }
  return 0;
}

std::optional<int64_t> cut_at(const std::vector<ScriptRun>& runs) {
  for (const ScriptRun& run : runs)
    for (const HookFacts& f : run.ranks)
      if (f.cut_at) return f.cut_at;
  return std::nullopt;
}

// One run's answer: its analysis (fitted across `others`), or why it has none.
struct RunAnswer {
  const ScriptRun* run = nullptr;
  std::optional<TraceAnalysis> analysis;
  std::string error;
};

// The run as the doctor's record: its traced record (a copy: the analysis keeps its own), or
// its failure.
RunRecord record_of(const RunAnswer& answer) {
  const ScriptRun& run = *answer.run;
  RunRecord record;
  if (answer.analysis) {
    record = answer.analysis->result.runs.front();
  } else {
    record.ok = false;
    record.error = answer.error;
  }
  record.label = label_of(run.devices);
  record.devices = run.devices;
  record.command = shell_command(run.command.args);
  record.command_wall_seconds = run.wall_seconds;
  if (record.ok) record.samples_per_step = samples_per_step(run, record);
  return record;
}

double mean_part_ms(const TraceAnalysis& a, std::size_t part) {
  double sum = 0;
  for (const RankBreakdown& b : a.ranks) sum += b.part_ms[part];
  return sum / static_cast<double>(a.ranks.size());
}

double mean_step_ms(const TraceAnalysis& a) {
  double sum = 0;
  for (const RankBreakdown& b : a.ranks) sum += b.step_ms;
  return sum / static_cast<double>(a.ranks.size());
}

// DDP's gradient synchronisation at the largest count: what each optimizer step pays for it.
std::string gradient_sync_text(const TraceAnalysis& a, int devices) {
  RankSyncs mean;
  for (const RankBreakdown& b : a.ranks) {
    mean.gradient_calls += b.syncs.gradient_calls / static_cast<double>(a.ranks.size());
    mean.gradient_syncs += b.syncs.gradient_syncs / static_cast<double>(a.ranks.size());
    mean.forward_passes += b.syncs.forward_passes / static_cast<double>(a.ranks.size());
  }
  if (mean.gradient_calls <= 0) return "";
  const std::string transfer =
      a.collectives && a.collectives->steps > 0
          ? fmt::format(", {:.3f} ms of transfer per step, {:.3f} ms of it not hidden behind compute (comm_wait)",
                        a.collectives->transfer_ms_per_step.front(),
                        mean_part_ms(a, static_cast<std::size_t>(Phase::kCommWait)))
          : "";
  return fmt::format(
      "Gradient synchronisation at {} devices: {:.1f} allreduce{} in backward per optimizer step, in {:.1f} of its "
      "{:.1f} micro-batches{}.\n",
      devices, mean.gradient_calls, mean.gradient_calls == 1 ? "" : "s", mean.gradient_syncs, mean.forward_passes,
      transfer);
}

// The batch the hook saw (Lightning), and its micro-batches per optimizer step.
std::string batch_text(const std::vector<ScriptRun>& runs) {
  for (const ScriptRun& run : runs) {
    for (const HookFacts& f : run.ranks) {
      if (!f.batch_size || f.steps == 0) continue;
      return fmt::format(
          "Per-device batch: {} (the first training batch's first dimension), {:.2f} micro-batches per optimizer "
          "step (accumulation; an epoch's last window is shorter): each device takes its own batch, so N devices "
          "train N times the samples of one per step.\n",
          *f.batch_size, static_cast<double>(f.micro_batches) / static_cast<double>(f.steps));
    }
  }
  return "";
}

// The runs side by side, where a step goes at each count, and the headline.
std::string comparison_text(const std::vector<RunAnswer>& answers, const DoctorResult& result) {
  fmt::memory_buffer out;
  auto to = std::back_inserter(out);
  fmt::format_to(to, "{:>8} {:>10} {:>12} {:>11} {:>8}\n", "devices", "step ms", "samples/s", "command s", "speedup");
  bool samples_known = true;
  for (const RunRecord& r : result.runs) {
    if (!r.ok) {
      fmt::format_to(to, "{:>8} {}\n", r.devices, "failed  (why: below)");
      continue;
    }
    samples_known &= r.samples_per_step > 0;
    const std::optional<double> speedup = result.speedup(r);
    fmt::format_to(to, "{:>8} {:>10.3f} {:>12} {:>11.2f} {:>8}\n", r.devices, 1e3 * r.seconds_per_step(),
                   r.samples_per_step > 0 ? fmt::format("{:.0f}", r.samples_per_step / r.seconds_per_step()) : "—",
                   r.command_wall_seconds, speedup ? fmt::format("{:.2f}x", *speedup) : "—");
  }
  fmt::format_to(to, "{}\n",
                 samples_known ? "(speedup: samples per second over one device's; command s: the whole command, "
                                 "start-up included)"
                               : "(speedup: N devices' steps against one's, each device keeping its batch as DDP "
                                 "does: the batch is not known, so samples/s is not given; command s: the whole "
                                 "command, start-up included)");
  for (const RunRecord& r : result.runs) {
    if (!r.ok) fmt::format_to(to, "devices={} failed: {}\n", r.devices, r.error);
  }
  // Where a step goes at each device count, and what the largest adds over the smallest.
  std::vector<const RunAnswer*> ok;
  for (const RunAnswer& a : answers)
    if (a.analysis) ok.push_back(&a);
  if (ok.size() >= 2) {
    const TraceAnalysis& small = *ok.front()->analysis;
    const TraceAnalysis& large = *ok.back()->analysis;
    const int n = ok.back()->run->devices, m = ok.front()->run->devices;
    const RunRecord* one = result.run_at(m);
    const RunRecord* many = result.run_at(n);
    if (one != nullptr && many != nullptr) {
      if (const std::optional<double> s = result.speedup(*many)) {
        const std::string verdict = *s < 1 ? "slower than" : "faster than";
        const std::string against =
            one->samples_per_step > 0 && many->samples_per_step > 0
                ? fmt::format("{:.0f} samples/s against {:.0f}", many->samples_per_step / many->seconds_per_step(),
                              one->samples_per_step / one->seconds_per_step())
                : fmt::format("a step of {:.2f} ms on each of {} against {:.2f} ms on {}",
                              1e3 * many->seconds_per_step(), n, 1e3 * one->seconds_per_step(), m);
        fmt::format_to(to, "\n{} devices are {} {}: {} ({:.2f}x).\n", n, verdict, m == 1 ? "one" : std::to_string(m),
                       against, *s);
      }
    }
    fmt::format_to(to, "\nWhere a step goes, ms per step (mean over the ranks), at {} and {} devices:\n", m, n);
    fmt::format_to(to, "{:<12} {:>10} {:>10} {:>10}\n", "part", label_of(m), label_of(n), "change");
    for (const Phase p : kStepPhases) {
      const auto i = static_cast<std::size_t>(p);
      const double a = mean_part_ms(small, i), b = mean_part_ms(large, i);
      if (a == 0 && b == 0) continue;
      fmt::format_to(to, "{:<12} {:>10.3f} {:>10.3f} {:>+10.3f}\n", phase_name(p), a, b, b - a);
    }
    fmt::format_to(to, "{:<12} {:>10.3f} {:>10.3f} {:>+10.3f}\n", "step", mean_step_ms(small), mean_step_ms(large),
                   mean_step_ms(large) - mean_step_ms(small));
    fmt::format_to(to, "{}", gradient_sync_text(large, n));
  }
  return fmt::to_string(out);
}

// What the hook saw of a run beyond its steps: the script's own profiler, its own failures.
std::vector<std::string> hook_notes(const ScriptRun& run) {
  std::vector<std::string> notes;
  const std::string who = run.devices > 0 ? label_of(run.devices) + ": " : "";
  for (const HookFacts& f : run.ranks) {
    if (f.own_profiler && notes.empty()) {
      notes.push_back(who +
                      "your script runs a profiler of its own: ddpscope's hook stayed out and read the traces "
                      "it exported");
    }
    for (const std::string& e : f.errors) {
      if (e != "no_device_control") notes.push_back(fmt::format("{}rank {}: the hook failed at {}", who, f.rank, e));
    }
  }
  return notes;
}

// What ddpscope did to the command: the devices it set, and where it cut the runs.
std::vector<std::string> what_was_done(const std::vector<ScriptRun>& runs) {
  std::vector<std::string> notes;
  for (const ScriptRun& run : runs) {
    if (const std::optional<std::string> said = override_note(run)) notes.push_back(*said);
    const std::vector<std::string> hook = hook_notes(run);
    notes.insert(notes.end(), hook.begin(), hook.end());
  }
  if (const std::optional<int64_t> cut = cut_at(runs)) {
    notes.push_back(
        fmt::format("each run was cut at {} optimizer steps (--max-steps): its own end was not reached", *cut));
  }
  return notes;
}

// The answer: the largest run's analysis (its findings, its what-if fitted across the runs, its
// notes marked as its own), every run as the result's runs, and what ddpscope did said first.
DoctorResult result_of(const ScriptRequest& request, std::vector<RunAnswer>& answers,
                       const std::vector<ScriptRun>& runs) {
  std::vector<RunRecord> records;
  for (const RunAnswer& a : answers) records.push_back(record_of(a));
  RunAnswer* largest = nullptr;
  for (RunAnswer& a : answers)
    if (a.analysis) largest = &a;
  DoctorResult result;
  if (largest != nullptr) {
    result = std::move(largest->analysis->result);
    for (std::string& note : result.notes) note = fmt::format("{}: {}", label_of(largest->run->devices), note);
  }
  result.source = RunSource::kTraces;
  result.command = request.ddpscope_command;
  const std::vector<std::string> done = what_was_done(runs);
  result.notes.insert(result.notes.begin(), done.begin(), done.end());
  result.setup = {{"command", shell_command(request.command)},
                  {"devices", fmt::format("{}", fmt::join(request.devices, ", "))},
                  {"optimizer steps traced", std::to_string(request.trace_steps)},
                  {"max steps", request.max_steps > 0 ? std::to_string(request.max_steps) : "to the end"}};
  for (const ScriptRun& run : runs) {
    const auto said =
        std::find_if(run.ranks.begin(), run.ranks.end(), [](const HookFacts& f) { return !f.python.empty(); });
    if (said == run.ranks.end()) continue;
    result.setup.emplace_back("python", said->python);
    result.setup.emplace_back("torch", said->torch);
    break;
  }
  result.runs = std::move(records);
  return result;
}

ScriptRun run_once(const CommandAtDevices& command, int devices, const std::filesystem::path& folder,
                   const std::filesystem::path& hook, int trace_steps, int64_t max_steps, std::FILE* out) {
  HookSettings settings;
  settings.out = std::filesystem::absolute(folder);
  settings.trace_steps = trace_steps;
  settings.wait_steps = wait_steps_for(trace_steps, max_steps);
  settings.max_steps = max_steps;
  if (devices > 0 && command.control == DeviceControl::kLightning) settings.devices = devices;
  if (out != nullptr) {
    std::fprintf(out, "%s: %s  (its output: %s)\n", devices > 0 ? label_of(devices).c_str() : "run",
                 shell_command(command.args).c_str(), (folder / "stdout.txt").string().c_str());
    std::fflush(out);
  }
  ScriptRun run = run_script(command, devices, folder, hook, settings);
  for (const HookFacts& f : run.ranks) {
    if (std::find(f.errors.begin(), f.errors.end(), "no_device_control") != f.errors.end() ||
        run.exit_code == kNoDeviceControl) {
      throw UsageError(
          fmt::format("{} cannot be made to use {} devices: it builds no Lightning Trainer and names "
                      "no count ddpscope can set; {}",
                      shell_command(command.args), devices, device_control_ways()));
    }
  }
  return run;
}

void write_outputs(const ScriptRequest& request, const DoctorResult& result, const std::vector<RunAnswer>& answers,
                   std::FILE* out) {
  write_file_atomically(request.dir / "doctor.json", to_json(result).dump(2) + "\n");
  write_file_atomically(request.dir / "report.html", render_report_html(result));
  for (const RunAnswer& a : answers) {
    if (a.analysis)
      write_file_atomically(a.run->folder / "merged.pt.trace.json.gz", gzip(merged_chrome_trace(*a.analysis)));
  }
  std::fprintf(out, "\nWrote %s, %s and each run's merged.pt.trace.json.gz (Perfetto).\n",
               (request.dir / "doctor.json").string().c_str(), (request.dir / "report.html").string().c_str());
}

}  // namespace

int wait_steps_for(int trace_steps, int64_t max_steps) {
  if (max_steps <= 0) return kWaitSteps;
  return static_cast<int>(std::clamp<int64_t>(max_steps - trace_steps - 2, 0, kWaitSteps));
}

int run_script_doctor(const ScriptRequest& request, std::FILE* out) {
  StopSignals signals;
  const std::filesystem::path hook = request.dir / "hook";
  write_python_hook(hook);
  std::vector<ScriptRun> runs;
  for (const int devices : request.devices) {
    const CommandAtDevices command = command_at_devices(request.command, devices);
    runs.push_back(run_once(command, devices, request.dir / fmt::format("devices_{}", devices), hook,
                            request.trace_steps, request.max_steps, out));
    if (runs.back().stopped || StopSignals::pending() != 0) break;  // what ran is still answered
  }

  // Each run read; the largest's what-if fitted across the others (analyze --scaling-from).
  std::vector<RunAnswer> answers;
  std::vector<TracedScale> scales;
  for (const ScriptRun& run : runs) {
    RunAnswer& answer = answers.emplace_back();
    answer.run = &run;
    if (run.stopped) {  // cut by Ctrl-C: its traces stay on disk, but a cut job's numbers are not its own
      answer.error = failure_of(run);
      continue;
    }
    try {
      answer.analysis.emplace(analyze_job(job_of(run)));
      scales.push_back(traced_scale(*answer.analysis, label_of(run.devices)));
    } catch (const Error& e) {
      answer.error = e.what();
    }
  }
  for (std::size_t i = answers.size(); i-- > 0;) {
    if (!answers[i].analysis) continue;
    std::vector<TracedScale> others;
    for (const TracedScale& s : scales)
      if (s.label != label_of(answers[i].run->devices)) others.push_back(s);
    if (!others.empty()) {
      try {
        answers[i].analysis.emplace(analyze_job(job_of(*answers[i].run), others));
      } catch (const UsageError& e) {  // runs that are plainly not one training: each stands alone
        answers[i].analysis->result.notes.push_back(fmt::format("no fit across the runs: {}", e.what()));
      }
    }
    break;
  }

  // The largest run's own text (its ranks, collectives, what-if, findings) before its result
  // becomes the answer's.
  RunAnswer* largest = nullptr;
  for (RunAnswer& a : answers)
    if (a.analysis) largest = &a;
  if (largest != nullptr && largest->analysis->prediction && !batch_text(runs).empty()) {
    // The hook saw the batch, which a trace alone does not hold.
    std::vector<std::string>& unknown = largest->analysis->prediction->unknown;
    std::erase_if(unknown, [](const std::string& u) { return u.starts_with("samples per second"); });
  }
  const std::string detail = largest != nullptr ? analysis_text(*largest->analysis) : "";
  DoctorResult result = result_of(request, answers, runs);
  std::fprintf(out, "\n%s%s%s", notes_text(what_was_done(runs)).c_str(), comparison_text(answers, result).c_str(),
               batch_text(runs).c_str());
  if (largest != nullptr) std::fprintf(out, "\nAt %d devices: %s", largest->run->devices, detail.c_str());
  write_outputs(request, result, answers, out);
  if (StopSignals::pending() != 0) return 128 + StopSignals::pending();
  for (const RunRecord& r : result.runs)
    if (!r.ok) return static_cast<int>(ExitCode::kOther);
  return 0;
}

TraceAnalysis analyze_script(const std::vector<std::string>& command, int trace_steps, int64_t max_steps,
                             const std::filesystem::path& dir) {
  StopSignals signals;
  const std::filesystem::path hook = dir / "hook";
  write_python_hook(hook);
  CommandAtDevices as_given;
  as_given.args = command;
  const ScriptRun run = run_once(as_given, 0, dir / "run", hook, trace_steps, max_steps, stderr);
  if (run.stopped) throw Error(static_cast<ExitCode>(128 + StopSignals::pending()), "stopped by a signal");
  try {
    TraceAnalysis analysis = analyze_job(job_of(run));
    const std::vector<std::string> said = what_was_done({run});
    analysis.result.notes.insert(analysis.result.notes.begin(), said.begin(), said.end());
    return analysis;
  } catch (const DataError& e) {
    throw Error(ExitCode::kOther, fmt::format("{}: {}", shell_command(command), e.what()));
  }
}

}  // namespace ddp
