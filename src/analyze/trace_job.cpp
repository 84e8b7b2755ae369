#include "analyze/trace_job.h"

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <glob.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <filesystem>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <thread>

#include "analyze/trace_reader.h"
#include "ddpscope/error.h"
#include "doctor/ranks_shown.h"

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

// What one file gave: its ranks (ddpscope's trace.json holds several), or why it gave none.
struct FileRead {
  std::vector<ReadRank> ranks;
  DistributedInfo distributed;
  std::optional<std::string> evaluation;  // a Lightning validation (test, predict) trace: its action
  std::optional<std::string> skipped;     // in a folder, no training trace: why
  std::optional<std::string> note;
  std::exception_ptr error;  // thrown where it was read, rethrown in the files' order
};

// One file read and reduced to its ranks' steps; its events are gone when this returns.
FileRead read_file(const TraceInput& f, const std::map<std::string, int>& mapped, bool several_files,
                   std::size_t threads, const std::function<void(double)>& progress) {
  FileRead out;
  const std::string& path = f.path;
  if (std::optional<std::string> action = lightning_evaluation_action(path)) {
    out.evaluation = std::move(action);
    return out;
  }
  const auto skip_or_throw = [&](const std::string& why, auto error) {
    if (!f.in_folder) throw error;
    out.skipped = why;
  };
  TraceFile trace;
  try {
    trace = read_trace(path, progress, threads);
  } catch (const NotATraceError& e) {
    skip_or_throw(e.what(), e);
    return out;
  }
  if (trace.dialect == TraceFile::Dialect::kAnalyzeOutput) {
    const std::string what = fmt::format(
        "{}: ddpscope analyze's merged trace (its --trace), not a job's own: analyze the traces it was made from",
        path);
    skip_or_throw(what, DataError(what));
    return out;
  }
  out.distributed = trace.distributed;
  const auto keep = [&](int rank, TraceFile& t) {
    if (rank >= kMaxRanks) {
      throw DataError(fmt::format("{} is rank {}: ddpscope reads jobs of up to {} ranks", path, rank, kMaxRanks));
    }
    ReadRank r{rank, path, profiler_of(path), t.host_name, std::nullopt, {}};
    try {
      r.steps = find_steps(t);
    } catch (const NotATraceError& e) {
      skip_or_throw(e.what(), e);
      return;
    }
    const std::optional<double> first = wall_clock_ns(t, r.steps.steps.front().start_ns);
    const TraceStep& last = r.steps.steps.back();
    const std::optional<double> end = wall_clock_ns(t, last.start_ns + last.duration_ns);
    if (first && end) r.wall_ns = std::pair{*first, *end};
    out.ranks.push_back(std::move(r));
  };
  if (trace.dialect == TraceFile::Dialect::kDdpscope) {
    std::vector<std::pair<int, TraceFile>> parts = split_by_process(std::move(trace));
    if (parts.empty()) throw DataError(fmt::format("{}: ddpscope's trace with no rank's events in it", path));
    for (auto& [rank, part] : parts) keep(rank, part);
    return out;
  }
  std::optional<int> rank = trace.distributed.rank;
  if (const auto m = mapped.find(canonical(path)); m != mapped.end()) rank = m->second;
  if (!rank) rank = rank_in_name(path);
  if (!rank) {
    if (several_files) {
      throw UsageError(
          fmt::format("{}: its rank is unknown (no distributedInfo in it, no \"rank<N>\" in its "
                      "name): give it with --rank-map {}=RANK",
                      path, path));
    }
    rank = 0;
    out.note = fmt::format("{} does not say its rank: analysed as the job's only rank", path);
  }
  keep(*rank, trace);
  return out;
}

// Every file read on every core, each file by one thread at a time (its parts on the cores
// left over): memory holds as many files' events as threads read, whatever the job's size.
// `progress` follows the bytes read of all the files together.
std::vector<FileRead> read_files(const std::vector<TraceInput>& files, const std::map<std::string, int>& mapped,
                                 bool several_files, const std::function<void(double)>& progress) {
  const std::size_t cores = std::max(1U, std::thread::hardware_concurrency());
  const std::size_t readers = std::min(cores, files.size());
  const std::size_t threads_per_file = std::max<std::size_t>(1, cores / readers);
  std::vector<double> bytes(files.size()), read_share(files.size(), 0.0);
  double total = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    std::error_code ec;
    bytes[i] = static_cast<double>(fs::file_size(files[i].path, ec));
    if (ec) bytes[i] = 0;
    total += bytes[i];
  }
  std::mutex progress_mutex;
  double done = 0;
  const auto progress_of = [&](std::size_t i) -> std::function<void(double)> {
    if (!progress || total <= 0) return {};
    return [&, i](double share) {
      std::lock_guard lock(progress_mutex);
      done += (share - read_share[i]) * bytes[i];
      read_share[i] = share;
      progress(std::clamp(done / total, 0.0, 1.0));
    };
  };
  std::vector<FileRead> out(files.size());
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  const auto reader = [&] {
    for (std::size_t i = next++; i < files.size() && !failed; i = next++) {
      try {
        out[i] = read_file(files[i], mapped, several_files, threads_per_file, progress_of(i));
      } catch (...) {
        out[i].error = std::current_exception();
        failed = true;  // the first failure in the files' order is reported; no new file is begun
      }
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < readers; ++t) pool.emplace_back(reader);
  reader();
  for (std::thread& t : pool) t.join();
  if (progress && total > 0) progress(1.0);
  return out;
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
                  const std::function<void(double)>& progress) {
  if (files.empty()) throw UsageError("no trace to analyse: name files, folders or patterns");
  TraceJob job;
  std::map<std::string, int> mapped;  // canonical path -> rank
  std::set<std::string> named;
  for (const TraceInput& f : files) named.insert(canonical(f.path));
  for (const auto& [path, rank] : rank_map) {
    if (!named.contains(canonical(path))) {
      throw UsageError(fmt::format("--rank-map {}={}: {} is not one of the traces read", path, rank, path));
    }
    mapped[canonical(path)] = rank;
  }
  std::size_t training_files = 0;
  for (const TraceInput& f : files) training_files += lightning_evaluation_action(f.path) ? 0 : 1;

  std::vector<FileRead> reads = read_files(files, mapped, training_files > 1, progress);
  std::optional<std::pair<int, std::string>> world_from;  // (world size, the file that said it)
  std::optional<std::pair<std::string, std::string>> backend_from;
  std::vector<std::string> evaluation, skipped;
  std::vector<ReadRank> read;
  for (std::size_t i = 0; i < files.size(); ++i) {
    FileRead& r = reads[i];
    const std::string& path = files[i].path;
    if (r.error) std::rethrow_exception(r.error);
    if (r.evaluation) evaluation.push_back(fmt::format("{} ({})", path, *r.evaluation));
    if (r.skipped) skipped.push_back(*r.skipped);
    if (r.note) job.notes.push_back(*r.note);
    if (const std::optional<int> w = r.distributed.world_size) {
      if (world_from && world_from->first != *w) {
        throw DataError(
            fmt::format("{} is of a job of {} ranks and {} of one of {}: the traces are of different "
                        "jobs",
                        world_from->second, world_from->first, path, *w));
      }
      world_from = {*w, path};
    }
    if (!r.distributed.backend.empty()) {
      if (backend_from && backend_from->first != r.distributed.backend) {
        throw DataError(fmt::format("{} is of a {} job and {} of a {} job: the traces are of different jobs",
                                    backend_from->second, backend_from->first, path, r.distributed.backend));
      }
      backend_from = {r.distributed.backend, path};
    }
    for (ReadRank& rank : r.ranks) read.push_back(std::move(rank));
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
    std::vector<int> missing;
    std::size_t at = 0;
    for (int rank = 0; rank < job.world_size; ++rank) {
      if (at < job.ranks.size() && job.ranks[at].rank == rank) {
        ++at;
      } else {
        missing.push_back(rank);
      }
    }
    job.notes.push_back(fmt::format("{} of the job's {} ranks have traces here: {} {} missing and not analysed",
                                    job.ranks.size(), job.world_size, rank_runs(missing, true),
                                    missing.size() > 1 ? "are" : "is"));
  }
  return job;
}

}  // namespace ddp
