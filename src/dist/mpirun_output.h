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

 private:
  void line(const std::string& text);
  bool is_open_mpi_line(const std::string& text);

  bool show_open_mpi_;
  bool in_help_block_ = false;
  std::string pending_;
  std::optional<std::string> rank_failure_;
  std::size_t hidden_lines_ = 0;
};

}  // namespace ddp
