#pragma once
// What mpirun writes on its standard error: the ranks' own lines (ddpscope's messages, which
// the user reads) mixed with Open MPI's (help blocks framed by dashed lines, ORTE logs,
// "Primary job terminated normally", "Read -1, expected ..."), which bury them. The relay
// passes the ranks' lines, holds Open MPI's back unless asked for, and remembers the first
// line that says which rank failed.
#include <cstddef>
#include <optional>
#include <string>

namespace ddp {

// "rank 1 (on host) was killed by signal 9 (Killed); ..." from one of mpirun's lines, or
// nothing when the line names no failed rank (Open MPI 4.1's wording).
std::optional<std::string> rank_failure_in(const std::string& line);

class MpirunOutput {
 public:
  // show_open_mpi: pass Open MPI's own lines too (--verbose).
  explicit MpirunOutput(bool show_open_mpi) : show_open_mpi_(show_open_mpi) {}

  // Bytes from mpirun's stderr; complete lines are written to this process's stderr.
  void feed(const char* data, std::size_t size);
  void flush();  // the last, unterminated line

  const std::optional<std::string>& rank_failure() const { return rank_failure_; }
  std::size_t hidden_lines() const { return hidden_lines_; }
  // The first paragraph of Open MPI's hidden lines, joined into one line ("" when none).
  const std::string& first_hidden_paragraph() const { return first_hidden_paragraph_; }
  bool ranks_spoke() const { return ranks_spoke_; }  // a line of ddpscope's came through

 private:
  void line(const std::string& text);
  bool is_open_mpi_line(const std::string& text);
  void keep_first_paragraph(const std::string& text);

  bool show_open_mpi_;
  bool in_help_block_ = false;
  std::string pending_;
  std::optional<std::string> rank_failure_;
  std::size_t hidden_lines_ = 0;
  std::string first_hidden_paragraph_;
  bool first_paragraph_done_ = false;
  bool ranks_spoke_ = false;
};

}  // namespace ddp
