#include "analyze/part_sources.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>

#include "analyze/part_parser.h"
#include "analyze/trace_stream.h"
#include "ddpscope/error.h"

namespace ddp {
namespace {

// A stream's part that finds no place to cut reads on up to this; then the file is read in one pass.
constexpr std::size_t kLongestPart = std::size_t{32} << 20;
// After a part's text: the closing and simdjson's padding.
constexpr std::size_t kClosingRoom = 8 + PartParser::kPadding;
// A plain file's place to cut before byte X is looked for in this window before X, then in the
// whole part before X.
constexpr std::uint64_t kCutWindow = std::uint64_t{64} << 10;

bool is_blank_in_line(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// What stands around a part in the middle of the file, so that it is whole JSON: the start of
// the object or array the events are in, and a closing null after the last event.
struct Frame {
  std::string_view opening, closing;
};

// By the file's first character other than a blank; nullopt where it opens no object or array.
std::optional<Frame> frame_of(std::string_view head) {
  const std::size_t first = head.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return std::nullopt;
  if (head[first] == '{') return Frame{R"({"traceEvents":[)", "null]}"};
  if (head[first] == '[') return Frame{"[", "null]"};
  return std::nullopt;
}

void put(PartText& text, std::string_view s) {
  text.reserve(text.begin + text.length + s.size());
  std::copy(s.begin(), s.end(), text.bytes.begin() + static_cast<std::ptrdiff_t>(text.begin + text.length));
  text.length += s.size();
}

// Spaces after the text, what simdjson may read past its end.
void pad(PartText& text) {
  text.reserve(text.begin + text.length + PartParser::kPadding);
  std::memset(text.bytes.data() + text.begin + text.length, ' ', PartParser::kPadding);
}

class FileParts : public PartSource {
 public:
  FileParts(std::string path, int fd, std::uint64_t size, std::size_t part_bytes, Frame frame)
      : path_(std::move(path)),
        fd_(fd),
        size_(size),
        part_bytes_(part_bytes),
        window_(std::min<std::uint64_t>(kCutWindow, part_bytes)),
        frame_(frame) {}
  ~FileParts() override { ::close(fd_); }
  FileParts(const FileParts&) = delete;
  FileParts& operator=(const FileParts&) = delete;

  bool next(Part& part, PartText& text) override {
    part.index = next_++;
    const std::uint64_t k = part.index;
    if (k * part_bytes_ >= size_) return false;
    // Read from the window before its start (its place to cut is found there) to the end of its
    // bytes, after room for the opening; on past a place to cut that is not there.
    const std::size_t room = frame_.opening.size();
    const std::uint64_t from = k == 0 ? 0 : k * part_bytes_ - window_;
    std::uint64_t to = from;
    read_to(text, room, from, std::min(size_, (k + 1) * part_bytes_), to);
    text.begin = 0;
    text.length = 0;
    const std::optional<std::uint64_t> begin = k == 0 ? 0 : cut_before(k * part_bytes_, text, room, from);
    if (!begin) return true;  // no place to cut before it: the part before holds its bytes
    std::uint64_t end = size_;
    for (std::uint64_t at = (k + 1) * part_bytes_; at < size_; at += part_bytes_) {
      if (at - *begin > kLongestPart) throw NoPlaceToCut{};
      read_to(text, room, from, at, to);
      if (const std::optional<std::uint64_t> cut = cut_before(at, text, room, from)) {
        end = *cut;
        break;
      }
    }
    read_to(text, room, from, end, to);
    // The opening over the bytes before the part's begin (they were only looked through).
    const std::string_view opening = k == 0 ? std::string_view() : frame_.opening;
    text.begin = room + (*begin - from) - opening.size();
    std::copy(opening.begin(), opening.end(), text.bytes.begin() + static_cast<std::ptrdiff_t>(text.begin));
    text.length = opening.size() + (end - *begin);
    part.cut_after = end < size_;
    if (part.cut_after) put(text, frame_.closing);  // over the next part's first bytes
    pad(text);
    part.read_share = static_cast<double>(end) / static_cast<double>(size_);
    return true;
  }

 private:
  // The file's bytes up to byte `until` into `text` after `room` (byte `from` first), with room
  // for the closing and the padding after them; `to`: how far they are read.
  void read_to(PartText& text, std::size_t room, std::uint64_t from, std::uint64_t until, std::uint64_t& to) {
    if (until <= to) return;
    text.reserve(room + (until - from) + kClosingRoom);
    read_at(text.bytes.data() + room + (to - from), until - to, to);
    to = until;
  }

  // The place to cut before byte `at`, in the same window whichever of its two parts looks: the
  // last in kCutWindow bytes before it, else in the part before it; nullopt where neither has one.
  std::optional<std::uint64_t> cut_before(std::uint64_t at, const PartText& text, std::size_t room,
                                          std::uint64_t from) {
    thread_local std::string scratch;  // a window outside the part's own bytes (rare)
    for (const std::uint64_t reach : {window_, part_bytes_}) {
      const std::uint64_t start = at - std::min(reach, at);
      std::string_view window;
      if (start >= from) {
        window = std::string_view(text.bytes.data() + room + (start - from), at - start);
      } else {
        scratch.resize(at - start);
        read_at(scratch.data(), at - start, start);
        window = scratch;
      }
      if (const std::size_t cut = last_cut(window); cut != std::string_view::npos) return start + cut;
    }
    return std::nullopt;
  }

  void read_at(char* into, std::uint64_t count, std::uint64_t offset) const {
    std::uint64_t done = 0;
    while (done < count) {
      const ssize_t got = ::pread(fd_, into + done, count - done, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) throw DataError(fmt::format("{}: cannot read it: {}", path_, std::strerror(errno)));
      if (got == 0) throw DataError(fmt::format("{}: it became shorter while it was read", path_));
      done += static_cast<std::uint64_t>(got);
    }
  }

  std::string path_;
  int fd_;
  std::uint64_t size_;
  std::uint64_t part_bytes_;
  std::uint64_t window_;
  Frame frame_;
  std::atomic<std::size_t> next_{0};
};

class StreamParts : public PartSource {
 public:
  StreamParts(const std::string& path, std::size_t part_bytes, const std::function<void(double)>& progress)
      : stream_(path, progress), part_bytes_(part_bytes) {}

  bool next(Part& part, PartText& text) override {
    std::lock_guard lock(mutex_);
    part.index = next_++;
    if (ended_) return false;
    text.begin = 0;
    text.length = 0;
    if (frame_) put(text, frame_->opening);
    const std::size_t body = text.length;
    put(text, carry_);
    while (true) {
      const std::size_t have = text.length;
      text.reserve(have + part_bytes_ + kClosingRoom);
      const std::size_t got = stream_.read(text.bytes.data() + have, part_bytes_);
      text.length = have + got;
      ended_ = got < part_bytes_;
      if (!frame_ && !(frame_ = frame_of(text.view()))) throw NoPlaceToCut{};
      if (ended_) break;
      if (const std::size_t cut = last_cut(text.view().substr(body)); cut != std::string_view::npos) {
        carry_.assign(text.view().substr(body + cut));
        text.length = body + cut;
        put(text, frame_->closing);
        part.cut_after = true;
        break;
      }
      if (text.length - body > kLongestPart) throw NoPlaceToCut{};
      // No place to cut yet: the same part, longer.
    }
    pad(text);
    return true;
  }

 private:
  std::mutex mutex_;
  TraceStream stream_;
  std::size_t part_bytes_;
  std::size_t next_ = 0;
  bool ended_ = false;
  std::optional<Frame> frame_;  // known from the first part
  std::string carry_;           // the bytes after the last cut
};

}  // namespace

std::size_t last_cut(std::string_view text) {
  const auto blanks_before = [&](std::size_t i, bool lines) {
    while (i > 0 && (is_blank_in_line(text[i - 1]) || (lines && text[i - 1] == '\n'))) --i;
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

std::unique_ptr<PartSource> open_part_source(const std::string& path, std::size_t part_bytes,
                                             const std::function<void(double)>& progress) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw DataError(fmt::format("{}: cannot read it: {}", path, std::strerror(errno)));
  struct stat info {};
  char head[4096];
  const ssize_t got = ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) ? ::pread(fd, head, sizeof head, 0) : -1;
  const std::string_view start(head, got > 0 ? static_cast<std::size_t>(got) : 0);
  if (start.size() >= 2 && start[0] == '\x1f' && start[1] == '\x8b') {  // gzip's magic number
    ::close(fd);
    return std::make_unique<StreamParts>(path, part_bytes, progress);
  }
  const std::optional<Frame> frame = frame_of(start);
  if (!frame || part_bytes == 0) {
    ::close(fd);
    return nullptr;
  }
  return std::make_unique<FileParts>(path, fd, static_cast<std::uint64_t>(info.st_size), part_bytes, *frame);
}

}  // namespace ddp
