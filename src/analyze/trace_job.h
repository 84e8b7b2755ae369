#pragma once
// One job's traces, one per rank: found from files, folders and glob patterns, read, given
// their ranks and checked to belong together.
//
// A file's rank comes from its distributedInfo (Kineto), else its name ("rank3", "rank_3",
// "rank-3"), else --rank-map; a single file of unknown rank is the job's only rank. ddpscope's
// own trace.json holds every rank (one process id each). Files of different jobs (another world
// size or backend) or two files of one rank are refused, naming the files.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "analyze/rank_steps.h"
#include "analyze/trace_file.h"

namespace ddp {

struct TracedRank {
  int rank = 0;
  std::string path;
  RankSteps steps;
};

struct TraceJob {
  std::vector<TracedRank> ranks;  // by increasing rank
  int world_size = 1;             // the traces' world, or the ranks read
  std::string backend;            // "nccl", "gloo" or empty where no trace says
  std::vector<std::string> notes;
};

// Files named by `inputs`: a file as given, a folder's *.json and *.json.gz (recursively), a
// glob pattern's matches. UsageError when an input names nothing.
std::vector<std::string> trace_files(const std::vector<std::string>& inputs);

// `rank_map`: a file's path (as found) to its rank. `progress(path, share)` follows reading.
TraceJob read_job(const std::vector<std::string>& files, const std::map<std::string, int>& rank_map,
                  const std::function<void(const std::string&, double)>& progress = {});

}  // namespace ddp
