#pragma once
// Work that one rank does for all (reading a file the others receive by broadcast): when it
// fails there, every rank must fail alike, or the others wait in the next collective until
// the watchdog ends the job with a wrong exit 4.
#include <functional>

#include "dist/communicator.h"

namespace ddp {

// Collective. Runs `work` on `root` only; a ddp::Error it throws is thrown on every rank, with
// the same exit code and message (printed once, by rank zero, as every alike error is).
void run_on_root_fail_everywhere(Communicator& comm, int root, const std::function<void()>& work);

}  // namespace ddp
