#include "train/stop_agreement.h"

#include <csignal>
#include <span>
#include <vector>

#include "base/stop_signal.h"

namespace ddp {

int agreed_stop_signal(Communicator& comm) {
  const int signal = StopSignals::pending();
  if (comm.size() == 1) return signal;
  std::vector<double> seen = {signal == SIGINT ? 1.0 : 0.0, signal == SIGTERM ? 1.0 : 0.0};
  comm.allreduce_sum(std::span<double>(seen));
  return seen[0] > 0 ? SIGINT : seen[1] > 0 ? SIGTERM : 0;
}

}  // namespace ddp
