#include "analyze/trace_parts.h"

#include <algorithm>
#include <deque>
#include <future>
#include <thread>
#include <vector>

#include "analyze/trace_stream.h"

namespace ddp {
namespace {

// A part that finds no place to cut reads on up to this, then the file is read in one pass.
constexpr std::size_t kLongestPart = std::size_t{32} << 20;

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// A parsed part: its names and events, the events in the order it added them.
struct Part {
  TraceFile file;
  std::vector<TraceEvent> events;
};

std::optional<Part> parse_part(std::string& text, bool cut_after) {
  try {
    std::optional<TraceFile> file = parse_part_in_place(text, cut_after);
    if (!file) return std::nullopt;
    std::vector<TraceEvent> events = file->events.sorted();  // stable: the order added, by start
    return Part{std::move(*file), std::move(events)};
  } catch (...) {  // out of memory, or the disk: the one pass reports it
    return std::nullopt;
  }
}

// The part's events into `out` after those before it, its names and threads re-numbered as one
// pass would have numbered them (each new one in the order it first appears).
void join(TraceFile& out, Part& part) {
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

}  // namespace

std::size_t last_cut(std::string_view text) {
  const auto blanks_before = [&](std::size_t i, bool lines) {
    while (i > 0 && (is_blank(text[i - 1]) || (lines && text[i - 1] == '\n'))) --i;
    return i;
  };
  std::size_t same_line = std::string_view::npos;
  for (std::size_t open = text.rfind('{'); open != std::string_view::npos && open > 0;
       open = text.rfind('{', open - 1)) {
    const std::size_t i = blanks_before(open, false);
    if (i > 0 && text[i - 1] == '\n') {
      const std::size_t comma = blanks_before(i - 1, true);
      if (comma > 0 && text[comma - 1] == ',') return open;
    } else if (same_line == std::string_view::npos && i > 1 && text[i - 1] == ',') {
      const std::size_t close = blanks_before(i - 1, false);
      if (close > 0 && text[close - 1] == '}') same_line = open;
    }
  }
  return same_line;
}

std::optional<TraceFile> read_trace_in_parts(const std::string& path, std::size_t part_bytes,
                                             const std::function<void(double)>& progress) {
  TraceStream stream(path, progress);
  const std::size_t workers = std::clamp(std::thread::hardware_concurrency(), 1U, 8U);
  std::deque<std::future<std::optional<Part>>> parsing;
  TraceFile out;
  out.path = path;
  bool first = true;
  std::string_view opening, closing;  // before every part after the first, after every part but the last
  std::string carry;                  // the file's bytes after the last cut
  for (bool ended = false; !ended;) {
    std::string text;
    text.reserve(opening.size() + carry.size() + part_bytes + closing.size() + 16);  // + the parse's padding
    if (!first) text.assign(opening);
    const std::size_t body = text.size();
    text += carry;
    const std::size_t have = text.size();
    text.resize(have + part_bytes);
    const std::size_t got = stream.read(text.data() + have, part_bytes);
    text.resize(have + got);
    ended = got < part_bytes;
    if (opening.empty()) {
      const std::size_t start = text.find_first_not_of(" \t\r\n");
      if (start == std::string::npos) return std::nullopt;
      if (text[start] == '{') {
        opening = R"({"traceEvents":[)";
        closing = "null]}";
      } else if (text[start] == '[') {
        opening = "[";
        closing = "null]";
      } else {
        return std::nullopt;
      }
    }
    if (!ended) {
      const std::size_t cut = last_cut(std::string_view(text).substr(body));
      if (cut == std::string_view::npos) {
        if (text.size() - body > kLongestPart) return std::nullopt;
        carry.assign(text, body);  // the same part, longer
        continue;
      }
      carry.assign(text, body + cut);
      text.resize(body + cut);
      text += closing;
    }
    if (parsing.size() >= workers) {
      std::optional<Part> done = parsing.front().get();
      parsing.pop_front();
      if (!done) return std::nullopt;
      join(out, *done);
    }
    parsing.push_back(std::async(std::launch::async, [text = std::move(text), cut_after = !ended]() mutable {
      return parse_part(text, cut_after);
    }));
    first = false;
  }
  for (auto& next : parsing) {
    std::optional<Part> done = next.get();
    if (!done) return std::nullopt;
    join(out, *done);
  }
  return out;
}

}  // namespace ddp
