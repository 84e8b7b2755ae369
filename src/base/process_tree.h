#pragma once
// The processes a process started, and theirs, read from /proc: what the launcher waits
// for and stops, since mpirun's ranks are not its own children.
#include <sys/types.h>

#include <string>
#include <vector>

namespace ddp {

// Every living descendant of `root` (children first), from /proc/<pid>/stat's parent field.
std::vector<pid_t> descendants(pid_t root);

// The executable of `pid` (/proc/<pid>/exe), or "" when it is gone or not readable.
std::string executable_of(pid_t pid);

}  // namespace ddp
