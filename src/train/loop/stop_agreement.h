#pragma once
// Collective, after an optimizer step: the stop signal every rank acts on. A signal may
// reach the ranks at different steps, so they agree on it with one small allreduce and all
// stop at the same step (with SIGINT if any rank got one, else SIGTERM), so they exit alike.
#include "dist/communicator.h"

namespace ddp {

// SIGINT, SIGTERM, or 0 when no rank was signalled.
int agreed_stop_signal(Communicator& comm);

}  // namespace ddp
