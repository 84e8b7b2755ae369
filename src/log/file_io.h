#pragma once
// Whole-file writes that never leave a half-written file behind, and plain appends.
// Failures are an Error naming the file and the system's reason (exit 1).
#include <filesystem>
#include <functional>
#include <string_view>

namespace ddp {

// Writes a temporary file beside `path`, fsyncs it, renames it over `path`, fsyncs the folder.
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

// The same for content made piece by piece: `produce` hands each piece to the sink it is
// given, so a large file is never held in memory whole.
using PieceSink = std::function<void(std::string_view)>;
void write_file_atomically(const std::filesystem::path& path, const std::function<void(const PieceSink&)>& produce);

// Appends all of `content` or, on failure, cuts the file back to its old size and throws.
// Without fsync: the bytes survive a crash of the process (they are in the page
// cache); an fsync per epoch would cost milliseconds each on the hot path.
void append_to_file(const std::filesystem::path& path, std::string_view content);

}  // namespace ddp
