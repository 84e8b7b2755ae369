#include "analyze_command.h"

#include <fmt/format.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>

#include "analyze/trace_analysis.h"
#include "ddpscope/error.h"
#include "doctor/command_line.h"
#include "doctor/report_html.h"
#include "log/file_io.h"
#include "log/gzip.h"
#include "log/run_dir.h"
#include "script/device_count.h"
#include "script/script_doctor.h"
#include "tensor/gemm.h"
#include "train/config/parse_value.h"

namespace ddp {
namespace {

struct AnalyzeOptions {
  std::vector<std::string> inputs;
  std::vector<std::string> rank_map;
  std::vector<std::string> scaling_from;
  bool json = false;
  std::optional<std::string> report;
  std::optional<std::string> trace;
  std::string trace_steps = "10";
  int64_t max_steps = 0;
  std::vector<std::string> command;  // analyze -- COMMAND
};

// The most optimizer steps a run's trace may hold: each rank's trace grows with them.
constexpr int64_t kMostTraceSteps = 1000;

std::map<std::string, int> parse_rank_map(const std::vector<std::string>& entries) {
  std::map<std::string, int> out;
  for (const std::string& entry : entries) {
    const std::size_t eq = entry.rfind('=');
    int rank = -1;
    const char* digits = eq == std::string::npos ? nullptr : entry.data() + eq + 1;
    const auto [end, error] = digits ? std::from_chars(digits, entry.data() + entry.size(), rank)
                                     : std::from_chars_result{nullptr, std::errc::invalid_argument};
    if (eq == 0 || error != std::errc() || end != entry.data() + entry.size() || rank < 0 || rank >= kMaxRanks) {
      throw UsageError(fmt::format("--rank-map {}: expected FILE=RANK, a trace's path and its rank (0 to {})", entry,
                                   kMaxRanks - 1));
    }
    out[entry.substr(0, eq)] = rank;
  }
  return out;
}

// On a terminal, reading shows how far it got over all the files together.
std::function<void(double)> progress_on_terminal(std::size_t files) {
  if (::isatty(STDERR_FILENO) == 0) return {};
  auto shown = std::make_shared<int>(-1);
  return [shown, files](double share) {
    const int percent = static_cast<int>(100 * share);
    if (percent == *shown) return;
    *shown = percent;
    std::fprintf(stderr, "\rreading %zu trace%s: %3d %%%s", files, files == 1 ? "" : "s", percent,
                 percent >= 100 ? "\n" : "");
    std::fflush(stderr);
  };
}

bool same_file(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (std::filesystem::equivalent(a, b, ec)) return true;
  const auto canonical = [](const std::string& p) {
    std::error_code e;
    const std::filesystem::path c = std::filesystem::weakly_canonical(p, e);
    return e ? std::filesystem::path(p).lexically_normal() : c;
  };
  return canonical(a) == canonical(b);
}

// An output must be neither a trace read nor the other output: writing it would replace it.
void refuse_outputs_over_inputs(const AnalyzeOptions& o, const std::vector<TraceInput>& read) {
  for (const auto& [flag, path] : {std::pair{"--report", o.report}, std::pair{"--trace", o.trace}}) {
    if (!path) continue;
    if (path->empty()) throw UsageError(fmt::format("{} needs a path: {} FILE", flag, flag));
    for (const TraceInput& input : read) {
      if (same_file(*path, input.path)) {
        throw UsageError(fmt::format("{} {}: that is a trace being read; name another file to write", flag, *path));
      }
    }
  }
  if (o.report && o.trace && same_file(*o.report, *o.trace)) {
    throw UsageError(fmt::format("--report and --trace both name {}: give each its own file", *o.report));
  }
}

// A --scaling-from job must be a whole job other than the one analysed.
void check_scaling_point(const std::string& given, const TraceJob& job, const std::vector<TraceInput>& files,
                         const std::vector<TraceInput>& analysed) {
  for (const TraceInput& f : files) {
    for (const TraceInput& a : analysed) {
      if (same_file(f.path, a.path)) {
        throw UsageError(fmt::format(
            "--scaling-from {}: {} is among the traces analysed; give the same training traced at another device "
            "count",
            given, f.path));
      }
    }
  }
  if (static_cast<int>(job.ranks.size()) < job.world_size) {
    throw UsageError(fmt::format(
        "--scaling-from {}: {} of its job's {} ranks have traces there; a scaling point needs every rank's trace "
        "(its step is the slowest rank's)",
        given, job.ranks.size(), job.world_size));
  }
}

std::string trace_text(const TraceAnalysis& analysis, const std::string& path) {
  std::string text = merged_chrome_trace(analysis);
  std::string lower = path;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.ends_with(".gz") ? gzip(text) : text;
}

TraceAnalysis analysis_of_traces(const AnalyzeOptions& o, const CLI::App& analyze) {
  if (o.inputs.empty()) {
    throw UsageError(
        "analyze needs traces or a command: name files, folders or patterns (ddpscope analyze traces/), or run your "
        "script after -- (ddpscope analyze -- python train.py)");
  }
  for (const char* name : {"--trace-steps", "--max-steps"}) {
    if (analyze.get_option(name)->count() > 0)
      throw UsageError(
          fmt::format("{} applies to a command run after --; traces already written are read as they are", name));
  }
  const std::map<std::string, int> rank_map = parse_rank_map(o.rank_map);
  const std::vector<TraceInput> files = trace_files(o.inputs);
  std::vector<TraceInput> everything_read = files;
  std::vector<TracedScale> others;
  std::vector<std::pair<std::string, std::vector<TraceInput>>> scaling;
  for (const std::string& path : o.scaling_from) {
    scaling.emplace_back(path, trace_files({path}));
    everything_read.insert(everything_read.end(), scaling.back().second.begin(), scaling.back().second.end());
  }
  refuse_outputs_over_inputs(o, everything_read);
  TraceJob job = read_job(files, rank_map, progress_on_terminal(files.size()));
  for (const auto& [given, job_files] : scaling) {
    TraceJob other = read_job(job_files, rank_map, progress_on_terminal(job_files.size()));
    check_scaling_point(given, other, job_files, files);
    others.push_back(traced_scale(analyze_job(std::move(other)), given));
  }
  return analyze_job(std::move(job), others);
}

// analyze -- COMMAND: run once as it is, with the hook, in ddpscope_logs/version_<n>.
TraceAnalysis analysis_of_command(const AnalyzeOptions& o, const CLI::App& analyze) {
  if (!o.inputs.empty() || !o.rank_map.empty() || !o.scaling_from.empty()) {
    throw UsageError(
        "with -- COMMAND analyze reads the traces its run writes: no PATH, --rank-map or --scaling-from (ddpscope "
        "doctor -- COMMAND runs it at several device counts)");
  }
  if (has_devices_placeholder(o.command)) {
    throw UsageError(
        "analyze runs your command as it is, at its own device count: {devices} needs a count, which "
        "ddpscope doctor --devices 1,N -- COMMAND gives");
  }
  refuse_outputs_over_inputs(o, {});
  const int steps = static_cast<int>(parse_int("trace-steps", o.trace_steps, 1, kMostTraceSteps));
  const std::filesystem::path dir = make_run_dir("ddpscope_logs", "", "", false);
  (void)analyze;
  return analyze_script(o.command, steps, o.max_steps, dir);
}

}  // namespace

void add_analyze_command(CLI::App& app, int argc, char** argv, const std::vector<std::string>& command) {
  auto options = std::make_shared<AnalyzeOptions>();
  CLI::App* analyze = app.add_subcommand(
      "analyze", "read a PyTorch or Lightning job's per-rank traces (torch.profiler, .json or .json.gz)");
  analyze->add_option(
      "paths", options->inputs,
      "trace files, folders of them, or glob patterns (a path that begins with '-' is written ./-name)");
  analyze->add_option("--rank-map", options->rank_map, "FILE=RANK: the rank of a trace that does not say it")
      ->allow_extra_args(false);
  analyze
      ->add_option("--scaling-from", options->scaling_from,
                   "PATH: the same training traced at another device count (a file, folder or pattern per "
                   "job; repeat it for more jobs); the what-if's compute is fitted across them")
      ->allow_extra_args(false);
  analyze->add_flag("--json", options->json, "print the analysis as one JSON object (ddpscope.analyze/1)");
  analyze->add_option("--report", options->report, "also write the doctor's report.html of the analysis here");
  analyze->add_option("--trace", options->trace,
                      "also write one Chrome trace of all ranks here (Perfetto; gzip where the name ends .gz)");
  analyze
      ->add_option("--trace-steps", options->trace_steps,
                   fmt::format("with -- COMMAND: optimizer steps traced, after a warm-up (1 to {})", kMostTraceSteps))
      ->group("your command");
  analyze->add_option("--max-steps", options->max_steps, "with -- COMMAND: end it after K optimizer steps")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
      ->group("your command");
  options->command = command;
  analyze->callback([options, analyze, argc, argv] {
    stop_idle_gemm_threads();  // analyze runs no GEMM: the reader has every core
    TraceAnalysis analysis =
        options->command.empty() ? analysis_of_traces(*options, *analyze) : analysis_of_command(*options, *analyze);
    analysis.result.command = shell_command({argv, argv + argc});
    // The answer first: an output that cannot be written must not take it away.
    if (options->json) {
      fmt::print("{}\n", to_json(analysis).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
    } else {
      fmt::print("{}", analysis_text(analysis));
    }
    std::fflush(stdout);
    if (options->report) {
      write_file_atomically(*options->report, render_report_html(analysis.result));
    }
    if (options->trace) write_file_atomically(*options->trace, trace_text(analysis, *options->trace));
  });
}

}  // namespace ddp
