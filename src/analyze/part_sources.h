#pragma once
// Where the parts of a large trace file come from (trace_parts.h): each part's text, made whole
// JSON by what stands around it, in a buffer with simdjson's padding after it.
//  - A plain file of P-byte parts: part k runs from the place to cut before byte k*P to the one
//    before byte (k+1)*P (last_cut, in the window before each), so every part is read (pread)
//    and cut by whichever thread takes it, on its own.
//  - A gzip file inflates as one stream: its parts are read in turn, each cut at the last place
//    to cut in what it read, the rest carried to the next.
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace ddp {

// Where the next part may begin in `text`: the last `{` that opens a line after a line ending in
// a comma (Kineto's layout: a line end is never inside a string), else the last `{` after `},`
// on one line (PyTorch's legacy array is one line; a cut inside a string fails its part's
// parse); npos where there is neither.
std::size_t last_cut(std::string_view text);

// A part's text: `length` bytes from `begin` in `bytes`, with at least simdjson's padding after
// them. The storage only grows, and serves one part after another.
struct PartText {
  std::string bytes;
  std::size_t begin = 0;
  std::size_t length = 0;
  std::string_view view() const { return {bytes.data() + begin, length}; }
  // The text and the room after it.
  std::string_view padded() const { return {bytes.data() + begin, bytes.size() - begin}; }
  void reserve(std::size_t n) {
    if (bytes.size() < n) bytes.resize(n);
  }
};

struct Part {
  std::size_t index = 0;   // in the file's order, from 0
  bool cut_after = false;  // it ends with the closing null (trace_parts.h), before the file's end
  double read_share = 0;   // of the file, up to this part's end; 0 where the source says it itself
};

// Thrown where no place to cut is found: the file is then read in one pass.
struct NoPlaceToCut {};

class PartSource {
 public:
  virtual ~PartSource() = default;
  // The next part into `text`, false once the file is done. Sets part.index before anything can
  // throw: NoPlaceToCut, or DataError where the file cannot be read or its gzip is damaged. Any
  // thread may call it.
  virtual bool next(Part& part, PartText& text) = 0;
};

// Parts of about `part_bytes`; nullptr where the file cannot be read so (it does not open with
// an object or an array). Throws DataError where the file cannot be opened. `progress` is
// handed the share read as a stream reads it (gzip); a plain file's parts carry it.
std::unique_ptr<PartSource> open_part_source(const std::string& path, std::size_t part_bytes,
                                             const std::function<void(double)>& progress);

}  // namespace ddp
