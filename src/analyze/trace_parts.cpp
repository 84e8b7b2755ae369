#include "analyze/trace_parts.h"

#include <algorithm>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "analyze/part_parser.h"
#include "analyze/trace_stream.h"

namespace ddp {
namespace {

// A part that finds no place to cut reads on up to this, then the file is read in one pass.
constexpr std::size_t kLongestPart = std::size_t{32} << 20;
// After a part's text: the closing (trace_parts.h) and simdjson's padding.
constexpr std::size_t kClosingRoom = 8 + PartParser::kPadding;

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// Things reused from one part to the next (parsers with their buffers, the parts' texts),
// taken by whichever thread needs one: as many exist as parts are in flight at once.
template <typename T>
class Reusable {
 public:
  std::unique_ptr<T> take() {
    std::lock_guard lock(mutex_);
    if (free_.empty()) return std::make_unique<T>();
    std::unique_ptr<T> t = std::move(free_.back());
    free_.pop_back();
    return t;
  }
  void give(std::unique_ptr<T> t) {
    std::lock_guard lock(mutex_);
    free_.push_back(std::move(t));
  }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<T>> free_;
};

// A part's text, its bytes reused from one part to the next: `bytes` only grows (growing
// writes zeros; a part's length is `length`), so a reused buffer is never written twice.
struct PartText {
  std::string bytes;
  std::size_t length = 0;
  void resize(std::size_t n) {
    if (bytes.size() < n) bytes.resize(n);
    length = n;
  }
  char* data() { return bytes.data(); }
  std::string_view view() const { return {bytes.data(), length}; }
  void append(std::string_view more) {
    const std::size_t at = length;
    resize(length + more.size());
    std::copy(more.begin(), more.end(), bytes.begin() + static_cast<std::ptrdiff_t>(at));
  }
};

std::optional<ParsedPart> parse_part(PartParser& parser, const PartText& text, bool cut_after) {
  try {
    return parser.parse(text.bytes, text.length, cut_after);
  } catch (...) {  // out of memory: the one pass reports it
    return std::nullopt;
  }
}

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
                                             const std::function<void(double)>& progress, std::size_t threads) {
  TraceStream stream(path, progress);
  const std::size_t workers = threads > 0 ? threads : std::clamp(std::thread::hardware_concurrency(), 1U, 8U);
  // Before the parts in flight: those finish (their futures wait) before these go.
  Reusable<PartText> texts;
  Reusable<PartParser> parsers;
  std::deque<std::future<std::optional<ParsedPart>>> parsing;
  TraceFile out;
  out.path = path;
  bool first = true;
  std::string_view opening, closing;  // before every part after the first, after every part but the last
  std::string carry;                  // the file's bytes after the last cut
  for (bool ended = false; !ended;) {
    std::unique_ptr<PartText> text = texts.take();
    text->resize(0);
    if (!first) text->append(opening);
    const std::size_t body = text->length;
    text->append(carry);
    const std::size_t have = text->length;
    // Room for the closing and the parser's padding after the most this part can hold.
    text->resize(have + part_bytes + kClosingRoom);
    const std::size_t got = stream.read(text->data() + have, part_bytes);
    text->resize(have + got);
    ended = got < part_bytes;
    if (opening.empty()) {
      const std::string_view head = text->view();
      const std::size_t start = head.find_first_not_of(" \t\r\n");
      if (start == std::string::npos) return std::nullopt;
      if (head[start] == '{') {
        opening = R"({"traceEvents":[)";
        closing = "null]}";
      } else if (head[start] == '[') {
        opening = "[";
        closing = "null]";
      } else {
        return std::nullopt;
      }
    }
    if (!ended) {
      const std::size_t cut = last_cut(text->view().substr(body));
      if (cut == std::string_view::npos) {
        if (text->length - body > kLongestPart) return std::nullopt;
        carry.assign(text->view().substr(body));  // the same part, longer
        texts.give(std::move(text));
        continue;
      }
      carry.assign(text->view().substr(body + cut));
      text->resize(body + cut);
      text->append(closing);
    }
    const std::size_t length = text->length;
    text->append(std::string(PartParser::kPadding, ' '));  // what simdjson may read past the end
    text->length = length;
    std::optional<ParsedPart> done;
    if (parsing.size() >= workers) {
      done = parsing.front().get();
      parsing.pop_front();
      if (!done) return std::nullopt;
    }
    parsing.push_back(
        std::async(std::launch::async, [&texts, &parsers, text = std::move(text), cut_after = !ended]() mutable {
          std::unique_ptr<PartParser> parser = parsers.take();
          std::optional<ParsedPart> part = parse_part(*parser, *text, cut_after);
          parsers.give(std::move(parser));
          texts.give(std::move(text));
          return part;
        }));
    // Joined once the next part parses: the run it may fill is sorted and spilled while
    // `workers` parts keep the cores busy.
    if (done) join(out, *done);
    first = false;
  }
  for (auto& next : parsing) {
    std::optional<ParsedPart> done = next.get();
    if (!done) return std::nullopt;
    join(out, *done);
  }
  return out;
}

}  // namespace ddp
