#include "analyze/trace_job.h"

#include <fmt/format.h>
#include <glob.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <regex>

#include "analyze/trace_reader.h"
#include "ddpscope/error.h"

namespace ddp {
namespace {

namespace fs = std::filesystem;

bool is_trace_name(const std::string& name) { return name.ends_with(".json") || name.ends_with(".json.gz"); }

std::optional<int> rank_in_name(const std::string& path) {
  static const std::regex kRank(R"((?:^|[^a-z])rank[-_]?(\d{1,7})(?:[^0-9]|$))", std::regex::icase);
  std::smatch m;
  const std::string name = fs::path(path).filename().string();
  if (std::regex_search(name, m, kRank)) return std::stoi(m[1].str());
  return std::nullopt;
}

// ddpscope's trace.json: one TraceFile per process id (its rank).
std::vector<std::pair<int, TraceFile>> split_by_process(TraceFile&& all) {
  std::map<int64_t, TraceFile> by_pid;
  all.events.for_each([&](const TraceEvent& e) {
    const int64_t pid = all.thread_pid[e.thread];
    if (pid < 0) return;
    TraceFile& part = by_pid[pid];
    if (part.path.empty()) {
      part.path = all.path;
      part.dialect = all.dialect;
    }
    TraceEvent copy = e;
    copy.name = part.names.intern(all.names[e.name]);
    copy.thread = part.threads.intern(all.threads[e.thread]);
    if (part.thread_pid.size() < part.threads.size()) part.thread_pid.push_back(pid);
    copy.process_group = part.names.intern(all.names[e.process_group]);
    part.add(copy);
  });
  std::vector<std::pair<int, TraceFile>> out;
  for (auto& [pid, part] : by_pid) out.emplace_back(static_cast<int>(pid), std::move(part));
  return out;
}

}  // namespace

std::vector<std::string> trace_files(const std::vector<std::string>& inputs) {
  std::vector<std::string> files;
  for (const std::string& input : inputs) {
    std::error_code ec;
    if (fs::is_directory(input, ec)) {
      std::vector<std::string> found;
      for (fs::recursive_directory_iterator it(input, ec), end; !ec && it != end; it.increment(ec)) {
        if (it->is_regular_file(ec) && is_trace_name(it->path().filename().string()))
          found.push_back(it->path().string());
      }
      if (ec) throw DataError(fmt::format("{}: cannot list it: {}", input, ec.message()));
      if (found.empty()) {
        throw UsageError(fmt::format("{}: a folder with no trace in it (no *.json or *.json.gz file)", input));
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(input, ec)) {
      files.push_back(input);
    } else {
      glob_t matches{};
      const int code = ::glob(input.c_str(), 0, nullptr, &matches);
      if (code == 0) {
        for (std::size_t i = 0; i < matches.gl_pathc; ++i) files.emplace_back(matches.gl_pathv[i]);
      }
      ::globfree(&matches);
      if (code != 0) throw UsageError(fmt::format("{}: no such file, folder or matching file", input));
    }
  }
  std::sort(files.begin(), files.end());
  files.erase(std::unique(files.begin(), files.end()), files.end());
  return files;
}

TraceJob read_job(const std::vector<std::string>& files, const std::map<std::string, int>& rank_map,
                  const std::function<void(const std::string&, double)>& progress) {
  if (files.empty()) throw UsageError("no trace to analyse: name files, folders or patterns");
  TraceJob job;
  std::map<int, std::string> path_of_rank;
  std::optional<std::pair<int, std::string>> world_from;  // (world size, the file that said it)
  std::optional<std::pair<std::string, std::string>> backend_from;
  const auto add = [&](int rank, const std::string& path, TraceFile& trace) {
    if (const auto other = path_of_rank.find(rank); other != path_of_rank.end()) {
      throw DataError(
          fmt::format("{} and {} are both rank {}: give one trace per rank (--rank-map FILE=RANK where a "
                      "name misleads)",
                      other->second, path, rank));
    }
    path_of_rank[rank] = path;
    job.ranks.push_back({rank, path, find_steps(trace)});
  };
  for (const std::string& path : files) {
    TraceFile trace =
        read_trace(path, progress ? [&](double share) { progress(path, share); } : std::function<void(double)>{});
    if (const std::optional<int> w = trace.distributed.world_size) {
      if (world_from && world_from->first != *w) {
        throw DataError(
            fmt::format("{} is of a job of {} ranks and {} of one of {}: the traces are of different "
                        "jobs",
                        world_from->second, world_from->first, path, *w));
      }
      world_from = {*w, path};
    }
    if (!trace.distributed.backend.empty()) {
      if (backend_from && backend_from->first != trace.distributed.backend) {
        throw DataError(fmt::format("{} is of a {} job and {} of a {} job: the traces are of different jobs",
                                    backend_from->second, backend_from->first, path, trace.distributed.backend));
      }
      backend_from = {trace.distributed.backend, path};
    }
    if (trace.dialect == TraceFile::Dialect::kDdpscope) {
      std::vector<std::pair<int, TraceFile>> parts = split_by_process(std::move(trace));
      if (parts.empty()) throw DataError(fmt::format("{}: ddpscope's trace with no rank's events in it", path));
      for (auto& [rank, part] : parts) add(rank, path, part);
      continue;
    }
    std::optional<int> rank = trace.distributed.rank;
    if (const auto mapped = rank_map.find(path); mapped != rank_map.end()) rank = mapped->second;
    if (!rank) rank = rank_in_name(path);
    if (!rank) {
      if (files.size() > 1) {
        throw UsageError(
            fmt::format("{}: its rank is unknown (no distributedInfo in it, no \"rank<N>\" in its "
                        "name): give it with --rank-map {}=RANK",
                        path, path));
      }
      rank = 0;
      job.notes.push_back(fmt::format("{} does not say its rank: analysed as the job's only rank", path));
    }
    add(*rank, path, trace);
  }
  std::sort(job.ranks.begin(), job.ranks.end(),
            [](const TracedRank& a, const TracedRank& b) { return a.rank < b.rank; });
  const int highest = job.ranks.back().rank;
  job.world_size = world_from ? world_from->first : highest + 1;
  if (backend_from) job.backend = backend_from->first;
  if (highest >= job.world_size) {
    throw DataError(fmt::format("{} is rank {} of a job of {} ranks", path_of_rank[highest], highest, job.world_size));
  }
  if (static_cast<int>(job.ranks.size()) < job.world_size) {
    std::vector<int> present;
    for (const TracedRank& r : job.ranks) present.push_back(r.rank);
    job.notes.push_back(
        fmt::format("{} of the job's {} ranks have traces here (rank{} {}): the others are not "
                    "analysed",
                    job.ranks.size(), job.world_size, present.size() > 1 ? "s" : "", fmt::join(present, ", ")));
  }
  return job;
}

}  // namespace ddp
