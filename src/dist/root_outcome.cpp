#include "dist/root_outcome.h"

#include <cstring>
#include <string>
#include <vector>

#include "ddpscope/error.h"

namespace ddp {

void run_on_root_fail_everywhere(Communicator& comm, int root, const std::function<void()>& work) {
  if (comm.size() == 1) {
    work();
    return;
  }
  uint64_t code = 0;
  std::string message;
  if (comm.rank() == root) {
    try {
      work();
    } catch (const Error& e) {
      code = static_cast<uint64_t>(e.code());
      message = e.what();
    }
  }
  // Every rank learns the root's code and, after a failure, its message's length and text.
  code = comm.allgather(code)[root];
  if (code == 0) return;
  const uint64_t length = comm.allgather(static_cast<uint64_t>(message.size()))[root];
  std::vector<std::byte> text(length);
  if (comm.rank() == root) std::memcpy(text.data(), message.data(), length);
  if (length > 0) comm.broadcast(text, root);
  throw Error(static_cast<ExitCode>(code), std::string(reinterpret_cast<const char*>(text.data()), length));
}

}  // namespace ddp
