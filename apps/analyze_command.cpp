#include "analyze_command.h"

#include <fmt/format.h>
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <charconv>
#include <cstdio>
#include <map>
#include <memory>

#include "analyze/trace_analysis.h"
#include "ddpscope/error.h"
#include "doctor/command_line.h"
#include "log/file_io.h"

namespace ddp {
namespace {

struct AnalyzeOptions {
  std::vector<std::string> inputs;
  std::vector<std::string> rank_map;
  std::vector<std::string> scaling_from;
  bool json = false;
  std::string report;
  std::string trace;
};

std::map<std::string, int> parse_rank_map(const std::vector<std::string>& entries) {
  std::map<std::string, int> out;
  for (const std::string& entry : entries) {
    const std::size_t eq = entry.rfind('=');
    int rank = -1;
    const char* digits = eq == std::string::npos ? nullptr : entry.data() + eq + 1;
    const auto [end, error] = digits ? std::from_chars(digits, entry.data() + entry.size(), rank)
                                     : std::from_chars_result{nullptr, std::errc::invalid_argument};
    if (eq == 0 || error != std::errc() || end != entry.data() + entry.size() || rank < 0) {
      throw UsageError(
          fmt::format("--rank-map {}: expected FILE=RANK, a trace's path and its rank (0 or more)", entry));
    }
    out[entry.substr(0, eq)] = rank;
  }
  return out;
}

// On a terminal, reading a large file shows how far it got.
std::function<void(const std::string&, double)> progress_on_terminal() {
  if (::isatty(STDERR_FILENO) == 0) return {};
  auto shown = std::make_shared<int>(-1);
  return [shown](const std::string& path, double share) {
    const int percent = static_cast<int>(100 * share);
    if (percent == *shown) return;
    *shown = percent;
    std::fprintf(stderr, "\rreading %s: %3d %%%s", path.c_str(), percent, percent >= 100 ? "\n" : "");
    std::fflush(stderr);
  };
}

}  // namespace

void add_analyze_command(CLI::App& app, int argc, char** argv) {
  auto options = std::make_shared<AnalyzeOptions>();
  CLI::App* analyze = app.add_subcommand(
      "analyze", "read a PyTorch or Lightning job's per-rank traces (torch.profiler, .json or .json.gz)");
  analyze->add_option("paths", options->inputs, "trace files, folders of them, or glob patterns")->required();
  analyze->add_option("--rank-map", options->rank_map, "FILE=RANK: the rank of a trace that does not say it");
  analyze->add_option("--scaling-from", options->scaling_from,
                      "PATH: the same training traced at another device count (a file, folder or pattern per "
                      "job); the what-if's compute is fitted across them");
  analyze->add_flag("--json", options->json, "print the analysis as one JSON object (ddpscope.analyze/1)");
  analyze->add_option("--report", options->report, "also write the doctor's report.html of the analysis here");
  analyze->add_option("--trace", options->trace, "also write one Chrome trace of all ranks here (Perfetto)");
  analyze->callback([options, argc, argv] {
    const std::map<std::string, int> rank_map = parse_rank_map(options->rank_map);
    std::vector<TracedScale> others;
    for (const std::string& path : options->scaling_from)
      others.push_back(traced_scale(analyze_job(read_job(trace_files({path}), rank_map, progress_on_terminal()))));
    TraceAnalysis analysis =
        analyze_job(read_job(trace_files(options->inputs), rank_map, progress_on_terminal()), others);
    if (!options->report.empty()) {
      write_file_atomically(options->report, analysis_report_html(analysis, shell_command({argv, argv + argc})));
    }
    if (!options->trace.empty()) write_file_atomically(options->trace, merged_chrome_trace(analysis));
    if (options->json) {
      fmt::print("{}\n", to_json(analysis).dump(2));
    } else {
      fmt::print("{}", analysis_text(analysis));
    }
  });
}

}  // namespace ddp
