#include "analyze/event_store.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <queue>
#include <string>

#include "ddpscope/error.h"

namespace ddp {
namespace {

bool by_start(const TraceEvent& a, const TraceEvent& b) { return a.start_ns < b.start_ns; }

std::string temporary_folder() {
  const char* set = std::getenv("TMPDIR");
  return set != nullptr && *set != '\0' ? set : "/tmp";
}

[[noreturn]] void temporary_file_failed(const char* what) {
  throw DataError(
      fmt::format("cannot {} the trace's events in a temporary file in {} ({}): set TMPDIR to a "
                  "folder with free space",
                  what, temporary_folder(), std::strerror(errno)));
}

// A file in TMPDIR that no other process can name: removed as soon as it is open.
std::FILE* unnamed_temporary_file() {
  std::string name = temporary_folder() + "/ddpscope-events-XXXXXX";
  const int fd = ::mkstemp(name.data());
  if (fd < 0) temporary_file_failed("keep");
  ::unlink(name.c_str());
  std::FILE* file = ::fdopen(fd, "w+b");
  if (file == nullptr) {
    ::close(fd);
    temporary_file_failed("keep");
  }
  return file;
}

// One run being read back: a window of it in memory.
struct RunCursor {
  static constexpr std::size_t kWindow = 4096;
  int fd = -1;
  std::size_t next = 0;  // the next event's index in the file
  std::size_t end = 0;
  std::vector<TraceEvent> window;
  std::size_t at = 0;

  bool load() {
    const std::size_t count = std::min(kWindow, end - next);
    window.resize(count);
    std::size_t done = 0;
    const std::size_t bytes = count * sizeof(TraceEvent);
    auto* out = reinterpret_cast<char*>(window.data());
    while (done < bytes) {
      const ssize_t got = ::pread(fd, out + done, bytes - done, static_cast<off_t>(next * sizeof(TraceEvent) + done));
      if (got <= 0) temporary_file_failed("read back");
      done += static_cast<std::size_t>(got);
    }
    next += count;
    at = 0;
    return count > 0;
  }
  const TraceEvent& head() const { return window[at]; }
  // False when the run is done.
  bool advance() { return ++at < window.size() || (next < end && load()); }
};

}  // namespace

EventStore::EventStore(std::size_t run_events) : run_events_(std::max<std::size_t>(run_events, 1)) {}

void EventStore::push_back(const TraceEvent& e) {
  buffer_.push_back(e);
  ++size_;
  if (buffer_.size() >= run_events_) spill();
}

void EventStore::spill() {
  if (!file_) {
    file_.reset(unnamed_temporary_file());
  }
  sort_run();
  const std::size_t first = runs_.empty() ? 0 : runs_.back().first + runs_.back().count;
  if (std::fwrite(buffer_.data(), sizeof(TraceEvent), buffer_.size(), file_.get()) != buffer_.size())
    temporary_file_failed("write");
  runs_.push_back({first, buffer_.size()});
  buffer_.clear();
}

void EventStore::sort_run() {
  // Kineto writes each kind of event mostly in order: often nothing is left to sort.
  if (!std::is_sorted(buffer_.begin(), buffer_.end(), by_start))
    std::stable_sort(buffer_.begin(), buffer_.end(), by_start);
}

void EventStore::for_each(const std::function<void(const TraceEvent&)>& visit) {
  sort_run();
  if (runs_.empty()) {
    for (const TraceEvent& e : buffer_) visit(e);
    return;
  }
  if (std::fflush(file_.get()) != 0) temporary_file_failed("write");
  // The runs on disk, then the one in memory: ties go to the earlier run, so to the earlier event.
  std::vector<RunCursor> cursors;
  for (const Run& run : runs_) {
    RunCursor c;
    c.fd = ::fileno(file_.get());
    c.next = run.first;
    c.end = run.first + run.count;
    if (c.load()) cursors.push_back(std::move(c));
  }
  std::size_t in_memory = 0;
  const auto later = [&](std::size_t a, std::size_t b) {  // for the heap: is a after b?
    const int64_t ta = a < cursors.size() ? cursors[a].head().start_ns : buffer_[in_memory].start_ns;
    const int64_t tb = b < cursors.size() ? cursors[b].head().start_ns : buffer_[in_memory].start_ns;
    return ta != tb ? ta > tb : a > b;
  };
  std::priority_queue<std::size_t, std::vector<std::size_t>, decltype(later)> heap(later);
  for (std::size_t i = 0; i < cursors.size(); ++i) heap.push(i);
  if (!buffer_.empty()) heap.push(cursors.size());
  while (!heap.empty()) {
    const std::size_t i = heap.top();
    heap.pop();
    if (i < cursors.size()) {
      visit(cursors[i].head());
      if (cursors[i].advance()) heap.push(i);
    } else {
      visit(buffer_[in_memory]);
      if (++in_memory < buffer_.size()) heap.push(i);
    }
  }
}

std::vector<TraceEvent> EventStore::sorted() {
  std::vector<TraceEvent> out;
  out.reserve(size_);
  for_each([&](const TraceEvent& e) { out.push_back(e); });
  return out;
}

}  // namespace ddp
