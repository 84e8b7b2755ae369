#include "analyze/trace_parts.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "analyze/part_parser.h"
#include "analyze/part_sources.h"

namespace ddp {
namespace {

// The part's events into `out` after those before it, its names and threads re-numbered as one
// pass would have numbered them (each new one in the order it first appears).
void join(TraceFile& out, ParsedPart& part) {
  std::vector<uint32_t> name_id(part.file.names.size());
  for (uint32_t i = 0; i < name_id.size(); ++i) name_id[i] = out.names.intern(part.file.names[i]);
  std::vector<uint32_t> thread_id(part.file.threads.size());
  for (uint32_t i = 0; i < thread_id.size(); ++i) {
    const std::size_t known = out.threads.size();
    thread_id[i] = out.threads.intern(part.file.threads[i]);
    if (out.threads.size() > known) out.thread_pid.push_back(part.file.thread_pid[i]);
  }
  for (TraceEvent e : part.events) {
    e.name = name_id[e.name];
    e.process_group = name_id[e.process_group];
    e.thread = thread_id[e.thread];
    out.add(e);
  }
  // What a later part says of the file wins, as in one pass (distributedInfo or otherData may
  // follow the events).
  if (part.file.dialect != TraceFile::Dialect::kKineto) out.dialect = part.file.dialect;
  const DistributedInfo& said = part.file.distributed;
  if (said.rank) out.distributed.rank = said.rank;
  if (said.world_size) out.distributed.world_size = said.world_size;
  if (!said.backend.empty()) out.distributed.backend = said.backend;
}

// A part as its thread left it: parsed, or why not (no exception: read the file in one pass).
struct PartResult {
  std::optional<ParsedPart> parsed;
  double read_share = 0;
  std::exception_ptr error;
};

// Every thread takes the next part, reads and parses it, and leaves it to be joined; whichever
// thread finds the next part in the file's order done joins it, and those after it that are
// done. So no thread waits on another's join (a run of events sorted and spilled) while there is
// a part to parse, and at most `window` parts are held, parsed or being parsed.
class PartReader {
 public:
  PartReader(PartSource& source, TraceFile& out, const std::function<void(double)>& progress, std::size_t threads)
      : source_(source), out_(out), progress_(progress), threads_(threads), window_(2 * threads) {}

  // False where a part failed to parse (or found no place to cut): read the file in one pass.
  // Rethrows what a part threw, the first in the file's order.
  bool run() {
    std::vector<std::thread> others;
    for (std::size_t t = 1; t < threads_; ++t) others.emplace_back([this] { work(); });
    work();
    for (std::thread& t : others) t.join();
    join_ready();
    if (error_) std::rethrow_exception(error_);
    return !failed_;
  }

 private:
  void work() {
    PartParser parser;
    PartText text;
    while (take_a_place()) {
      Part part;
      PartResult result;
      try {
        if (!source_.next(part, text)) {
          give_back_a_place();
          return;
        }
        // An empty part: its bytes are the part's before (no place to cut between them).
        result.parsed = text.length == 0 ? ParsedPart{} : parser.parse(text.padded(), text.length, part.cut_after);
        result.read_share = part.read_share;
      } catch (const NoPlaceToCut&) {
      } catch (...) {
        result.error = std::current_exception();
      }
      {
        std::lock_guard lock(mutex_);
        done_.emplace(part.index, std::move(result));
      }
      join_ready();
    }
  }

  bool take_a_place() {
    std::unique_lock lock(mutex_);
    room_.wait(lock, [&] { return stopped_ || held_ < window_; });
    if (stopped_) return false;
    ++held_;
    return true;
  }

  void give_back_a_place() {
    std::lock_guard lock(mutex_);
    --held_;
    room_.notify_all();
  }

  // Joins the parts done in the file's order from the next one on, unless another thread is at
  // it; checks again after letting go, so that a part left while it joined is not left behind.
  void join_ready() {
    while (true) {
      {
        std::unique_lock joining(join_mutex_, std::try_to_lock);
        if (!joining) return;
        while (std::optional<PartResult> next = take_next()) join_one(*next);
      }
      std::lock_guard lock(mutex_);
      if (stopped_ || !done_.contains(next_join_)) return;
    }
  }

  std::optional<PartResult> take_next() {
    std::lock_guard lock(mutex_);
    const auto found = done_.find(next_join_);
    if (stopped_ || found == done_.end()) return std::nullopt;
    PartResult result = std::move(found->second);
    done_.erase(found);
    return result;
  }

  void join_one(PartResult& result) {
    bool ok = result.parsed.has_value() && !result.error;
    if (ok) {
      try {
        join(out_, *result.parsed);
        if (progress_ && result.read_share > 0) progress_(result.read_share);
      } catch (...) {
        result.error = std::current_exception();
        ok = false;
      }
    }
    std::lock_guard lock(mutex_);
    ++next_join_;
    --held_;
    if (!ok) {
      stopped_ = true;
      failed_ = true;
      error_ = result.error;
    }
    room_.notify_all();
  }

  PartSource& source_;
  TraceFile& out_;
  const std::function<void(double)>& progress_;
  std::size_t threads_;
  std::size_t window_;
  std::mutex join_mutex_;  // held by the thread joining
  std::mutex mutex_;       // what follows
  std::condition_variable room_;
  std::map<std::size_t, PartResult> done_;  // parts not joined yet, by index
  std::size_t next_join_ = 0;
  std::size_t held_ = 0;  // parts taken and not joined
  bool stopped_ = false;
  bool failed_ = false;
  std::exception_ptr error_;
};

}  // namespace

std::optional<TraceFile> read_trace_in_parts(const std::string& path, std::size_t part_bytes,
                                             const std::function<void(double)>& progress, std::size_t threads) {
  std::unique_ptr<PartSource> source = open_part_source(path, part_bytes, progress);
  if (!source) return std::nullopt;
  TraceFile out;
  out.path = path;
  const std::size_t workers = threads > 0 ? threads : std::clamp(std::thread::hardware_concurrency(), 1U, 8U);
  if (!PartReader(*source, out, progress, workers).run()) return std::nullopt;
  return out;
}

}  // namespace ddp
