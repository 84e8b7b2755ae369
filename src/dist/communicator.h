#pragma once
// What ranks say to each other (DESIGN §3). Two implementations: local (one rank, every
// call a no-op or a copy) and MPI. Nothing home-made carries bytes between processes.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace ddp {

// A started asynchronous allreduce; wait() blocks until the data is reduced in place.
// test() returns whether it is done without blocking; MPI moves a nonblocking collective
// forward only inside such calls, so a rank busy computing calls it now and then.
class PendingAllreduce {
 public:
  virtual ~PendingAllreduce() = default;
  virtual void wait() = 0;
  virtual bool test() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // In-place sums over all ranks.
  virtual void allreduce_sum(std::span<float> data) = 0;
  virtual void allreduce_sum(std::span<double> data) = 0;
  // Starts an in-place sum; data must stay alive and untouched until wait() returns.
  virtual std::unique_ptr<PendingAllreduce> allreduce_sum_async(std::span<float> data) = 0;
  // Root's bytes to every rank.
  virtual void broadcast(std::span<std::byte> data, int root) = 0;
  virtual void barrier() = 0;
  // Every rank's value, indexed by rank.
  virtual std::vector<double> allgather(double value) = 0;
  virtual std::vector<uint64_t> allgather(uint64_t value) = 0;
  // Every rank's host name (for --num-nodes checks and reports).
  virtual std::string host_name() const = 0;
};

std::unique_ptr<Communicator> make_local_communicator();

}  // namespace ddp
