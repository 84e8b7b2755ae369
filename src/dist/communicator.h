#pragma once
// What ranks say to each other. Two implementations: local (one rank, every
// call a no-op or a copy) and MPI. Nothing home-made carries bytes between processes.
// The gradient path asks for what a GPU transport (NCCL) gives: an average computed by
// the transport, ordered on a device stream; on the host the stream is null and the MPI
// path folds the 1/W into the pass that completes the sum.
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
  // In-place means over all ranks (the sum times 1/W, as the reducer always averaged), of
  // host memory (GPU ranks average over NCCL instead).
  virtual void allreduce_mean(std::span<float> data) = 0;
  // Starts one; data must stay alive and untouched until it holds the mean, once wait()
  // returns or test() returned true.
  virtual std::unique_ptr<PendingAllreduce> allreduce_mean_async(std::span<float> data) = 0;
  // ZeRO-1's two halves of an allreduce (a ring allreduce is a reduce-scatter followed by an
  // all-gather), over ranges: rank r owns counts[r] elements of data, in rank order, and the
  // counts add up to data.size(). After reduce_scatter_mean this rank's range holds the mean
  // over ranks and the rest of data is unspecified; after allgather_ranges every range holds
  // its owner's values on every rank.
  virtual void reduce_scatter_mean(std::span<float> data, std::span<const int> counts) = 0;
  virtual void allgather_ranges(std::span<float> data, std::span<const int> counts) = 0;
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
