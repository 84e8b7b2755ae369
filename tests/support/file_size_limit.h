#pragma once
// A full disk, simulated: writes past the limit fail with EFBIG in this process only.
#include <sys/resource.h>

#include <csignal>

namespace ddp::testing {

// SIGXFSZ is ignored instead of killing the process; the soft limit is lowered (and can be
// raised again), so run this in a forked child (EXPECT_EXIT).
inline void set_file_size_limit(rlim_t bytes) {
  std::signal(SIGXFSZ, SIG_IGN);
  rlimit limit{};
  ::getrlimit(RLIMIT_FSIZE, &limit);
  limit.rlim_cur = bytes;
  ::setrlimit(RLIMIT_FSIZE, &limit);
}

inline void remove_file_size_limit() {
  rlimit limit{};
  ::getrlimit(RLIMIT_FSIZE, &limit);
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_FSIZE, &limit);
}

}  // namespace ddp::testing
