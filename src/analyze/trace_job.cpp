#include "analyze/trace_job.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <glob.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <regex>
#include <set>

#include "analyze/trace_reader.h"
#include "ddpscope/error.h"

namespace ddp {
namespace {

namespace fs = std::filesystem;

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::string file_name(const std::string& path) { return fs::path(path).filename().string(); }

bool is_trace_name(const std::string& name) {
  const std::string l = lower(name);
  return l.ends_with(".json") || l.ends_with(".json.gz");
}

std::optional<int> rank_in_name(const std::string& path) {
  static const std::regex kRank(R"((?:^|[^a-z])rank[-_]?(\d{1,7})(?:[^0-9]|$))", std::regex::icase);
  static const std::regex kLightningLegacy(R"(^(\d{1,7})_trace\.json(\.gz)?$)");  // "<local rank>_trace.json"
  std::smatch m;
  const std::string name = file_name(path);
  if (std::regex_search(name, m, kRank) || std::regex_match(name, m, kLightningLegacy)) return std::stoi(m[1].str());
  return std::nullopt;
}

// Lightning's PyTorchProfiler names each trace by the step function that ended its profiling cycle:
// the action of a validation, test or predict trace, or nullopt.
std::optional<std::string> lightning_evaluation_action(const std::string& path) {
  static const std::regex kAction(R"([.\]](validation_step|test_step|predict_step)\.)");
  std::smatch m;
  const std::string name = file_name(path);
  if (std::regex_search(name, m, kAction)) return m[1].str();
  return std::nullopt;
}

// torch.profiler's tensorboard_trace_handler names a cycle's trace "<worker>.<time ns>.pt.trace.json":
// the folder and worker, which a profiler's cycles share; the path itself for any other name.
std::string profiler_of(const std::string& path) {
  static const std::regex kCycle(R"(^(.*)\.\d{9,}\.pt\.trace\.json(\.gz)?$)");
  std::smatch m;
  const std::string name = file_name(path);
  if (!std::regex_match(name, m, kCycle)) return path;
  return (fs::path(path).parent_path() / m[1].str()).string();
}

std::string canonical(const std::string& path) {
  std::error_code ec;
  const fs::path c = fs::weakly_canonical(path, ec);
  return ec ? path : c.string();
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

// A folder's traces, its subfolders' too (links to folders are not followed); a folder that
// cannot be listed is named.
void scan_folder(const fs::path& folder, std::vector<TraceInput>& out) {
  std::error_code ec;
  fs::directory_iterator it(folder, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const fs::directory_entry& entry = *it;
    std::error_code kind;
    if (entry.is_directory(kind) && !entry.is_symlink(kind)) {
      scan_folder(entry.path(), out);
    } else if (entry.is_regular_file(kind) && is_trace_name(entry.path().filename().string())) {
      out.push_back({entry.path().string(), true});
    }
  }
  if (ec) throw DataError(fmt::format("{}: cannot list it: {}", folder.string(), ec.message()));
}

std::vector<TraceInput> folder_traces(const std::string& folder) {
  std::vector<TraceInput> found;
  scan_folder(folder, found);
  if (found.empty()) {
    throw UsageError(fmt::format("{}: a folder with no trace in it (no *.json or *.json.gz file)", folder));
  }
  std::sort(found.begin(), found.end(), [](const TraceInput& a, const TraceInput& b) { return a.path < b.path; });
  return found;
}

// A step's start on the wall clock, where the trace's clock is one (Kineto's baseTimeNanoseconds,
// or timestamps since 1970); nullopt on a clock of the process's own (the legacy array).
std::optional<double> wall_clock_ns(const TraceFile& t, int64_t ns) {
  if (t.base_time_ns) return *t.base_time_ns + static_cast<double>(ns);
  if (ns > 1'000'000'000'000'000'000) return static_cast<double>(ns);  // after 2001
  return std::nullopt;
}

std::string utc(double ns) {
  const auto time = std::chrono::system_clock::time_point(std::chrono::seconds(static_cast<int64_t>(ns / 1e9)));
  return fmt::format("{:%Y-%m-%d %H:%M} UTC", fmt::gmtime(std::chrono::system_clock::to_time_t(time)));
}

// One rank as read from one file (or, for ddpscope's trace.json, one process of it).
struct ReadRank {
  int rank = 0;
  std::string path;
  std::string profiler;  // profiler_of(path): a rank's files of one profiler are its cycles
  std::string host_name;
  std::optional<std::pair<double, double>> wall_ns;  // its steps' first start and last end
  RankSteps steps;
};

// Several cycles of one rank's profiler, in time order, as one rank's steps.
RankSteps joined(std::vector<ReadRank*> cycles) {
  std::sort(cycles.begin(), cycles.end(), [](const ReadRank* a, const ReadRank* b) {
    return a->steps.steps.front().start_ns < b->steps.steps.front().start_ns;
  });
  RankSteps out = std::move(cycles.front()->steps);
  for (std::size_t i = 1; i < cycles.size(); ++i) {
    RankSteps& more = cycles[i]->steps;
    const std::size_t offset = out.steps.size();
    out.steps.insert(out.steps.end(), more.steps.begin(), more.steps.end());
    for (CollectiveCall c : more.collectives) {
      c.step += offset;
      out.collectives.push_back(std::move(c));
    }
    out.dropped_warmup += more.dropped_warmup;
    out.dropped_partial += more.dropped_partial;
    out.repeated_steps += more.repeated_steps;
    out.repeated_events += more.repeated_events;
  }
  return out;
}

// Ranks whose steps ran hours apart on the wall clock are of different jobs (the same job's
// ranks profile the same steps).
void refuse_jobs_apart(const std::vector<ReadRank>& read) {
  constexpr double kApartNs = 3600e9;
  const ReadRank* earliest_end = nullptr;
  const ReadRank* latest_start = nullptr;
  for (const ReadRank& r : read) {
    if (!r.wall_ns) return;  // a clock of its own: nothing to compare
    if (earliest_end == nullptr || r.wall_ns->second < earliest_end->wall_ns->second) earliest_end = &r;
    if (latest_start == nullptr || r.wall_ns->first > latest_start->wall_ns->first) latest_start = &r;
  }
  if (earliest_end == nullptr || latest_start->wall_ns->first - earliest_end->wall_ns->second < kApartNs) return;
  throw DataError(fmt::format(
      "{} traced steps from {} and {} from {}, {:.0f} hours apart: the traces are of different jobs",
      earliest_end->path, utc(earliest_end->wall_ns->first), latest_start->path, utc(latest_start->wall_ns->first),
      (latest_start->wall_ns->first - earliest_end->wall_ns->second) / 3600e9));
}

}  // namespace

std::vector<TraceInput> trace_files(const std::vector<std::string>& inputs) {
  std::vector<TraceInput> files;
  for (const std::string& input : inputs) {
    std::error_code ec;
    if (fs::is_directory(input, ec)) {
      const std::vector<TraceInput> found = folder_traces(input);
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(input, ec)) {
      files.push_back({input, false});
    } else {
      glob_t matches{};
      const int code = ::glob(input.c_str(), 0, nullptr, &matches);
      std::vector<std::string> named;
      if (code == 0) {
        for (std::size_t i = 0; i < matches.gl_pathc; ++i) named.emplace_back(matches.gl_pathv[i]);
      }
      ::globfree(&matches);
      if (code != 0) throw UsageError(fmt::format("{}: no such file, folder or matching file", input));
      for (const std::string& path : named) {
        if (fs::is_directory(path, ec)) {
          const std::vector<TraceInput> found = folder_traces(path);
          files.insert(files.end(), found.begin(), found.end());
        } else {
          files.push_back({path, false});
        }
      }
    }
  }
  // One file named twice (another spelling, a link, a folder and a file in it) is read once.
  std::set<std::string> seen;
  std::vector<TraceInput> out;
  for (const TraceInput& f : files) {
    if (seen.insert(canonical(f.path)).second) out.push_back(f);
  }
  std::sort(out.begin(), out.end(), [](const TraceInput& a, const TraceInput& b) { return a.path < b.path; });
  return out;
}

TraceJob read_job(const std::vector<TraceInput>& files, const std::map<std::string, int>& rank_map,
                  const std::function<void(const std::string&, double)>& progress) {
  if (files.empty()) throw UsageError("no trace to analyse: name files, folders or patterns");
  TraceJob job;
  std::map<std::string, std::pair<std::string, int>> mapped;  // canonical path -> (as given, rank)
  for (const auto& [path, rank] : rank_map) mapped[canonical(path)] = {path, rank};
  std::set<std::string> named;
  for (const TraceInput& f : files) named.insert(canonical(f.path));
  for (const auto& [key, given] : mapped) {
    if (!named.contains(key)) {
      throw UsageError(
          fmt::format("--rank-map {}={}: {} is not one of the traces read", given.first, given.second, given.first));
    }
  }
  std::optional<std::pair<int, std::string>> world_from;  // (world size, the file that said it)
  std::optional<std::pair<std::string, std::string>> backend_from;
  std::vector<std::string> evaluation, skipped;
  std::vector<ReadRank> read;
  std::size_t training_files = 0;
  for (const TraceInput& f : files) training_files += lightning_evaluation_action(f.path) ? 0 : 1;

  for (const TraceInput& f : files) {
    const std::string& path = f.path;
    if (const std::optional<std::string> action = lightning_evaluation_action(path)) {
      evaluation.push_back(fmt::format("{} ({})", path, *action));
      continue;
    }
    TraceFile trace;
    try {
      trace = read_trace(path, progress ? [&](double share) { progress(path, share); } : std::function<void(double)>{});
    } catch (const NotATraceError& e) {
      if (!f.in_folder) throw;
      skipped.push_back(e.what());
      continue;
    }
    if (trace.dialect == TraceFile::Dialect::kAnalyzeOutput) {
      const std::string what = fmt::format(
          "{}: ddpscope analyze's merged trace (its --trace), not a job's own: analyze the traces it "
          "was made from",
          path);
      if (!f.in_folder) throw DataError(what);
      skipped.push_back(what);
      continue;
    }
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
    const auto keep = [&](int rank, TraceFile& t) {
      if (rank >= kMaxRanks) {
        throw DataError(fmt::format("{} is rank {}: ddpscope reads jobs of up to {} ranks", path, rank, kMaxRanks));
      }
      ReadRank r{rank, path, profiler_of(path), t.host_name, std::nullopt, {}};
      try {
        r.steps = find_steps(t);
      } catch (const NotATraceError& e) {
        if (!f.in_folder) throw;
        skipped.push_back(e.what());
        return;
      }
      const std::optional<double> first = wall_clock_ns(t, r.steps.steps.front().start_ns);
      const TraceStep& last = r.steps.steps.back();
      const std::optional<double> end = wall_clock_ns(t, last.start_ns + last.duration_ns);
      if (first && end) r.wall_ns = std::pair{*first, *end};
      read.push_back(std::move(r));
    };
    if (trace.dialect == TraceFile::Dialect::kDdpscope) {
      std::vector<std::pair<int, TraceFile>> parts = split_by_process(std::move(trace));
      if (parts.empty()) throw DataError(fmt::format("{}: ddpscope's trace with no rank's events in it", path));
      for (auto& [rank, part] : parts) keep(rank, part);
      continue;
    }
    std::optional<int> rank = trace.distributed.rank;
    if (const auto m = mapped.find(canonical(path)); m != mapped.end()) rank = m->second.second;
    if (!rank) rank = rank_in_name(path);
    if (!rank) {
      if (training_files > 1) {
        throw UsageError(
            fmt::format("{}: its rank is unknown (no distributedInfo in it, no \"rank<N>\" in its "
                        "name): give it with --rank-map {}=RANK",
                        path, path));
      }
      rank = 0;
      job.notes.push_back(fmt::format("{} does not say its rank: analysed as the job's only rank", path));
    }
    keep(*rank, trace);
  }
  for (const std::string& s : skipped) job.notes.push_back("skipped: " + s);
  if (!evaluation.empty()) {
    job.notes.push_back(fmt::format(
        "left out, as not training steps: {} (Lightning writes each step function's profile apart; analyze reads "
        "training_step's)",
        fmt::join(evaluation, ", ")));
  }
  if (read.empty()) {
    throw DataError(evaluation.empty() ? "no training trace among the files read (see the files skipped above)"
                                       : fmt::format("no training trace here, only {}", fmt::join(evaluation, ", ")));
  }
  refuse_jobs_apart(read);

  // A rank's files: one, or the cycles of one profiler; two of another kind are refused.
  std::map<int, std::vector<ReadRank*>> by_rank;
  for (ReadRank& r : read) {
    std::vector<ReadRank*>& mine = by_rank[r.rank];
    if (!mine.empty() && mine.front()->profiler != r.profiler) {
      throw DataError(
          fmt::format("{} and {} are both rank {}: give one trace per rank (--rank-map FILE=RANK where a "
                      "name misleads)",
                      mine.front()->path, r.path, r.rank));
    }
    mine.push_back(&r);
  }
  for (auto& [rank, mine] : by_rank) {
    if (mine.size() > 1) {
      std::vector<std::string> paths;
      for (const ReadRank* r : mine) paths.push_back(r->path);
      job.notes.push_back(fmt::format("rank {}: {} profiling cycles read as its steps, in time order ({})", rank,
                                      mine.size(), fmt::join(paths, ", ")));
    }
    job.ranks.push_back({rank, mine.front()->path, mine.front()->host_name, joined(mine)});
  }
  const int highest = job.ranks.back().rank;
  job.world_said = world_from.has_value();
  job.world_size = world_from ? world_from->first : highest + 1;
  if (backend_from) job.backend = backend_from->first;
  if (highest >= job.world_size) {
    throw DataError(fmt::format("{} is rank {} of a job of {} ranks", job.ranks.back().path, highest, job.world_size));
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
