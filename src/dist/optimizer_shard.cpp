#include "dist/optimizer_shard.h"

#include <algorithm>
#include <chrono>
#include <climits>

#include "base/check.h"
#include "ddpscope/error.h"

namespace ddp {

OptimizerShard::OptimizerShard(Communicator& comm, std::size_t num_params, bool sharded)
    : comm_(comm), sharded_(sharded && comm.size() > 1) {
  const auto world = static_cast<std::size_t>(comm.size());
  if (!sharded_) {
    end_ = num_params;
    return;
  }
  DDP_CHECK_LE(num_params, static_cast<std::size_t>(INT_MAX), "sharding more than 2^31 parameters");
  counts_.resize(world);
  for (std::size_t r = 0; r < world; ++r) {
    counts_[r] = static_cast<int>(num_params / world + (r < num_params % world ? 1 : 0));
  }
  const auto rank = static_cast<std::size_t>(comm.rank());
  for (std::size_t r = 0; r < rank; ++r) begin_ += static_cast<std::size_t>(counts_[r]);
  end_ = begin_ + static_cast<std::size_t>(counts_[rank]);
}

void OptimizerShard::count(std::size_t bytes, double seconds) {
  ++stats_.calls;
  stats_.bytes += static_cast<int64_t>(bytes);
  stats_.seconds += seconds;
  stats_.in_flight_seconds += seconds;
}

void OptimizerShard::reduce_scatter_mean(std::span<float> grads) {
  if (!sharded_) return;
  const auto start = std::chrono::steady_clock::now();
  comm_.reduce_scatter_mean(grads, counts_);
  count(grads.size_bytes(), std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

void OptimizerShard::allgather(std::span<float> params) {
  if (!sharded_) return;
  const auto start = std::chrono::steady_clock::now();
  comm_.allgather_ranges(params, counts_);
  count(params.size_bytes(), std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

std::unique_ptr<Optimizer> OptimizerShard::gather(Optimizer& shard, const OptimizerConfig& config) {
  DDP_CHECK(sharded_, "gather() of an unsharded optimizer: checkpoint the optimizer itself");
  std::size_t total = 0;
  for (int c : counts_) total += static_cast<std::size_t>(c);
  std::unique_ptr<Optimizer> whole = make_optimizer(config, total);
  const auto mine_state = shard.state();
  const auto whole_state = whole->state();
  DDP_CHECK_EQ(mine_state.size(), whole_state.size(), "the optimizers keep different state");
  for (std::size_t i = 0; i < whole_state.size(); ++i) {
    std::ranges::copy(mine_state[i].second, mine(whole_state[i].second).begin());
    comm_.allgather_ranges(whole_state[i].second, counts_);
  }
  whole->set_steps(shard.steps());
  return whole;
}

void OptimizerShard::take_mine(Optimizer& whole, Optimizer& shard) const {
  const auto whole_state = whole.state();
  const auto mine_state = shard.state();
  DDP_CHECK_EQ(mine_state.size(), whole_state.size(), "the optimizers keep different state");
  for (std::size_t i = 0; i < whole_state.size(); ++i) {
    const std::span<float> part = mine(whole_state[i].second);
    DDP_CHECK_EQ(part.size(), mine_state[i].second.size(), "the shard's state differs from its range");
    std::ranges::copy(part, mine_state[i].second.begin());
  }
  shard.set_steps(whole.steps());
}

}  // namespace ddp
