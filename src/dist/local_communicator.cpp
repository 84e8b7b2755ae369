// The one-rank world: sums over one rank are the data itself, so every call is a no-op.
#include <unistd.h>

#include <array>

#include "ddpscope/error.h"
#include "dist/communicator.h"

namespace ddp {
namespace {

class DoneAllreduce final : public PendingAllreduce {
 public:
  void wait() override {}
  bool test() override { return true; }
};

class LocalCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void allreduce_sum(std::span<float>) override {}
  void allreduce_sum(std::span<double>) override {}
  // The mean over one rank is the data.
  void allreduce_mean(std::span<float>) override {}
  std::unique_ptr<PendingAllreduce> allreduce_mean_async(std::span<float>) override {
    return std::make_unique<DoneAllreduce>();
  }
  // One rank owns the whole range.
  void reduce_scatter_mean(std::span<float>, std::span<const int>) override {}
  void allgather_ranges(std::span<float>, std::span<const int>) override {}
  void broadcast(std::span<std::byte>, int) override {}
  void barrier() override {}
  std::vector<double> allgather(double value) override { return {value}; }
  std::vector<uint64_t> allgather(uint64_t value) override { return {value}; }
  std::string host_name() const override {
    std::array<char, 256> name{};
    if (gethostname(name.data(), name.size() - 1) != 0) return "localhost";
    return name.data();
  }
};

}  // namespace

std::unique_ptr<Communicator> make_local_communicator() { return std::make_unique<LocalCommunicator>(); }

}  // namespace ddp
