#pragma once
// `ddpscope analyze PATH... [--json] [--rank-map FILE=RANK]...`: a PyTorch or Lightning job's
// own per-rank traces (src/analyze/), answered in the doctor's words.
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace ddp {

// Adds the `analyze` subcommand (argc, argv: the command for report.html's "Reproduce"); its callback prints to stdout
// and throws UsageError (no input, a bad --rank-map, a trace of unknown rank among several) or DataError (a file that
// is no trace, damaged, of another job, or without steps).
// `command`: analyze -- COMMAND's, run once with the hook and its traces analysed (empty: read PATHs).
void add_analyze_command(CLI::App& app, int argc, char** argv, const std::vector<std::string>& command);

}  // namespace ddp
