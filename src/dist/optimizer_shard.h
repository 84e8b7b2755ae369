#pragma once
// ZeRO stage 1 (Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion
// Parameter Models", SC'20), --strategy ddp_zero1: each rank keeps the optimizer state of one
// contiguous range of the flat parameters, 1/W of what plain DDP keeps on every rank. The
// optimizer step becomes
//   reduce_scatter_mean(grads)                  this rank's range: the mean gradient  (comm_wait)
//   optimizer.step(mine(params), mine(grads))   the update of this rank's range       (optimizer)
//   allgather(params)                           every range, from its owner           (comm_wait)
// which moves the bytes of one ring allreduce (a reduce-scatter followed by an all-gather),
// with none of it overlapping backward. Ranges: n / W elements each, the first n % W ranks
// one more. Unsharded (any other strategy, or one rank) the range is everything and no
// collective is called. Checkpoints hold the whole state, as DDP's do: gather() assembles it
// and take_mine() keeps this rank's part of it, so a ddp_zero1 checkpoint resumes under ddp
// and back, at any world size.
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "ddpscope/optimizer.h"
#include "dist/communicator.h"
#include "dist/grad_reducer.h"

namespace ddp {

class OptimizerShard {
 public:
  // comm must outlive the shard.
  OptimizerShard(Communicator& comm, std::size_t num_params, bool sharded);

  bool sharded() const { return sharded_; }
  std::size_t begin() const { return begin_; }        // this rank's range: its first element
  std::size_t size() const { return end_ - begin_; }  // elements in this rank's range
  std::span<float> mine(std::span<float> whole) const { return whole.subspan(begin_, size()); }
  const std::vector<int>& counts() const { return counts_; }  // every rank's range's size, by rank

  // Collectives, each on every rank; with sharded() false they do nothing.
  void reduce_scatter_mean(std::span<float> grads);
  void allgather(std::span<float> params);
  // A whole-size optimizer holding every rank's state and this one's step count, for a
  // checkpoint (allocates; sharded() only).
  std::unique_ptr<Optimizer> gather(Optimizer& shard, const OptimizerConfig& config);
  // This rank's range of whole's state, and its step count, into shard (whole read on every rank).
  void take_mine(Optimizer& whole, Optimizer& shard) const;

  // The two collectives, counted as the reducer counts its allreduces (none overlap backward).
  const AllreduceStats& stats() const { return stats_; }

 private:
  void count(std::size_t bytes, double seconds);

  Communicator& comm_;
  bool sharded_;
  std::vector<int> counts_;  // per rank
  std::size_t begin_ = 0;
  std::size_t end_ = 0;
  AllreduceStats stats_;
};

}  // namespace ddp
