#pragma once
// Reading an input file whole (a CSV file, a checkpoint): only a regular file is read, so that
// a FIFO cannot block the run and a device such as /dev/zero cannot grow it without bound.
// Failures are a DataError naming the file and the reason (exit 3).
#include <string>

namespace ddp {

// `expected` completes "expected ..." in the refusal of a folder or other non-file, e.g.
// "a CSV file (--data csv:PATH)".
std::string read_input_file(const std::string& path, const std::string& expected);

}  // namespace ddp
