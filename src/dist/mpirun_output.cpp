#include "dist/mpirun_output.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <regex>

namespace ddp {

std::optional<std::string> rank_failure_in(const std::string& line) {
  //   "mpirun noticed that process rank 1 with PID 123 on node vm exited on signal 9 (Killed)."
  //   "mpirun has exited due to process rank 1 with PID 0 on" (an exit without MPI_Finalize)
  static const std::regex kSignalled(
      R"(process rank (\d+) with PID \d+ on node (\S+) exited on signal (\d+)( \(([^)]*)\))?)");
  static const std::regex kImproper(R"(mpirun has exited due to process rank (\d+) with PID)");
  std::smatch m;
  if (std::regex_search(line, m, kSignalled)) {
    return fmt::format("rank {} (on {}) was killed by signal {}{}; mpirun stopped the other ranks", m[1].str(),
                       m[2].str(), m[3].str(), m[5].matched ? " (" + m[5].str() + ")" : "");
  }
  if (std::regex_search(line, m, kImproper)) {
    return fmt::format("rank {} exited without finishing (no MPI_Finalize); mpirun stopped the other ranks",
                       m[1].str());
  }
  return std::nullopt;
}

void MpirunOutput::feed(const char* data, std::size_t size) {
  pending_.append(data, size);
  // A progress bar redraws its line after '\r' and ends it only when done: pass each redraw.
  std::size_t end;
  while ((end = pending_.find_first_of("\n\r", 1)) != std::string::npos) {
    line(pending_.substr(0, end + 1));
    pending_.erase(0, end + 1);
  }
}

void MpirunOutput::flush() {
  if (!pending_.empty()) line(pending_);
  pending_.clear();
}

// Open MPI's help messages are blocks between lines of dashes; its daemons and components
// prefix their logs with "[host:pid]"; a few lines come bare.
bool MpirunOutput::is_open_mpi_line(const std::string& text) {
  static const std::regex kDashes(R"(^-{20,}\s*$)");
  static const std::regex kBare(
      R"(^(\[[^\]\s]+:\d+\] |mpirun |Primary job +terminated|Read -?\d+, expected \d+, errno = |\[\[\d+,\d+\],\d+\]))");
  if (std::regex_search(text, kDashes)) {
    in_help_block_ = !in_help_block_;
    return true;
  }
  return in_help_block_ || std::regex_search(text, kBare);
}

// The first paragraph of what was hidden: the reason when mpirun fails before any rank runs
// ("There are not enough slots available ...").
void MpirunOutput::keep_first_paragraph(const std::string& text) {
  static const std::regex kDashes(R"(^-{20,}\s*$)");
  // A blank line reaches line() joined to the next one ("\nThere are ..."): split it here.
  std::size_t at = 0;
  while (at < text.size() && !first_paragraph_done_) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string piece = text.substr(at, end - at);
    at = end + 1;
    const std::size_t first = piece.find_first_not_of(" \t\r");
    if (first == std::string::npos) {  // a blank line ends the paragraph it follows
      first_paragraph_done_ = !first_hidden_paragraph_.empty();
      continue;
    }
    if (std::regex_search(piece, kDashes)) continue;
    if (!first_hidden_paragraph_.empty()) first_hidden_paragraph_ += ' ';
    first_hidden_paragraph_ += piece.substr(first, piece.find_last_not_of(" \t\r") + 1 - first);
  }
}

void MpirunOutput::line(const std::string& text) {
  if (!rank_failure_) rank_failure_ = rank_failure_in(text);
  // A rank's own message is passed even when it arrives inside one of mpirun's help blocks
  // (the ranks' output reaches mpirun on its own path, interleaved with what it prints).
  const bool ours = text.starts_with("ddpscope: ");
  ranks_spoke_ = ranks_spoke_ || ours;
  if (!ours && is_open_mpi_line(text) && !show_open_mpi_) {
    ++hidden_lines_;
    keep_first_paragraph(text);
    return;
  }
  std::fwrite(text.data(), 1, text.size(), stderr);
  std::fflush(stderr);
}

}  // namespace ddp
