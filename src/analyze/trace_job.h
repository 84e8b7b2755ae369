#pragma once
// One job's traces, one per rank: found from files, folders and glob patterns, read, given
// their ranks and checked to belong together.
//
// A file's rank comes from --rank-map, else its distributedInfo (Kineto), else its name
// ("rank3", "rank_3", "rank-3", Lightning's "<local rank>_trace.json"); a single file of unknown
// rank is the job's only rank. ddpscope's own trace.json holds every rank (one process id each).
// As Lightning's PyTorchProfiler writes them, a rank's validation_step (test_step,
// predict_step) traces are left out, said, and its training_step traces of several profiling
// cycles (tensorboard_trace_handler's "<worker>.<time>.pt.trace.json", one per cycle) are that
// rank's steps in order. Files of different jobs (another world size or backend, steps hours
// apart) or two files of one rank are refused, naming the files; in a folder, a file that is no
// trace (a summary.json, analyze's own merged trace) is skipped and said.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "analyze/rank_steps.h"
#include "analyze/trace_file.h"

namespace ddp {

struct TracedRank {
  int rank = 0;
  std::string path;       // its (first) training trace
  std::string host_name;  // where the trace says (Kineto's host_name), else empty
  RankSteps steps;
};

struct TraceJob {
  std::vector<TracedRank> ranks;  // by increasing rank
  int world_size = 1;             // the traces' world, or the ranks read
  bool world_said = false;        // whether a trace said it (distributedInfo), rather than the ranks read
  std::string backend;            // "nccl", "gloo" or empty where no trace says
  std::vector<std::string> notes;
};

// The most ranks a job may have here (a rank's number beyond it is refused).
inline constexpr int kMaxRanks = 1 << 20;

// A file to read: named, or found in a folder (where what is no trace is skipped, not refused).
struct TraceInput {
  std::string path;
  bool in_folder = false;
};

// Files named by `inputs`: a file as given, a folder's *.json and *.json.gz (recursively, in any
// letter case), a glob pattern's matches (folders among them read as folders); one file named
// twice (another spelling, a link) is read once. UsageError when an input names nothing.
std::vector<TraceInput> trace_files(const std::vector<std::string>& inputs);

// `rank_map`: a file's path to its rank (as given; matched to the file it names, however spelt).
// The files are read in parallel, on every core; `progress(share)` follows the share of their
// bytes read, from any of the threads reading (one at a time).
TraceJob read_job(const std::vector<TraceInput>& files, const std::map<std::string, int>& rank_map,
                  const std::function<void(double)>& progress = {});

}  // namespace ddp
