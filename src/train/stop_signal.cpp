#include "train/stop_signal.h"

#include <unistd.h>

#include <atomic>
#include <csignal>

namespace ddp {
namespace {

std::atomic<int> received{0};
struct sigaction previous_int, previous_term;

void on_signal(int signal) {
  int expected = 0;
  if (!received.compare_exchange_strong(expected, signal)) _exit(128 + signal);  // the second one
}

}  // namespace

StopSignals::StopSignals() {
  received = 0;
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &previous_int);
  sigaction(SIGTERM, &action, &previous_term);
}

StopSignals::~StopSignals() {
  sigaction(SIGINT, &previous_int, nullptr);
  sigaction(SIGTERM, &previous_term, nullptr);
}

int StopSignals::pending() { return received.load(std::memory_order_relaxed); }

}  // namespace ddp
