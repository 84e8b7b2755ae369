#include "train/loop/stop_agreement.h"

#include <csignal>
#include <span>
#include <vector>

#include "base/stop_signal.h"

namespace ddp {

int agreed_stop_signal(Communicator& comm) {
  const int signal = StopSignals::pending();
  if (comm.size() == 1) return signal;
  // Each signal's count over the ranks; the first of these that any rank saw is the job's.
  constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
  std::vector<double> seen;
  for (const int s : kSignals) seen.push_back(signal == s ? 1.0 : 0.0);
  comm.allreduce_sum(std::span<double>(seen));
  for (std::size_t i = 0; i < seen.size(); ++i) {
    if (seen[i] > 0) return kSignals[i];
  }
  return 0;
}

}  // namespace ddp
