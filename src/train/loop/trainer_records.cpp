// The Trainer's run, beyond its loop: what it records as training goes (trace spans, arrivals
// at the gradient collectives, the clocks they are read on) and its end (the summary gathered
// from every rank, the trace, the final checks and files).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>

#include "dist/gather.h"
#include "observe/thread_census.h"
#include "observe/trace_writer.h"
#include "train/loop/trainer_run.h"
#include "train/records/gather_stats.h"
#include "train/records/trace_size.h"

namespace ddp {

// Spans for every phase switch and allreduce, in buffers sized for the whole run up front.
void Trainer::Run::start_trace() {
  const EpochPlan plan = rank_epoch_plan();
  const int64_t epochs = epochs_to_run(options_.max_epochs, options_.max_steps, plan);
  const TraceSize size = trace_size(plan, epochs, static_cast<int64_t>(optim_.reducer->num_buckets()));
  recording_.spans = std::make_unique<SpanBuffer>(static_cast<std::size_t>(size.step_spans));
  clock_.record_spans(recording_.spans.get());
  optim_.reducer->record_spans(recording_.spans.get());
  data_.train_loader->record_spans(static_cast<std::size_t>(size.fill_spans));
  // Rank r's clock + offset = rank zero's clock, read right after a barrier on every rank
  // (accurate to the barrier's exit skew, microseconds; on one machine the clocks agree).
  if (comm_.size() > 1) {
    comm_.barrier();
    const std::vector<double> now = comm_.allgather(static_cast<double>(steady_now_ns()));
    recording_.clock_offset_ns = static_cast<int64_t>(now[0] - now[comm_.rank()]);
  }
}

// Arrivals at every gradient collective, in a buffer sized for the whole run up front; its
// origin is taken after a barrier when training starts (fit).
void Trainer::Run::start_arrivals() {
  const EpochPlan plan = rank_epoch_plan();
  const int64_t syncs = options_.sync_every_micro_batch ? plan.micro_batches : plan.optimizer_steps;
  const int64_t per_sync = arrivals_per_sync();
  const int64_t epochs = epochs_to_run(options_.max_epochs, options_.max_steps, plan);
  constexpr int64_t kMaxArrivals = int64_t{1} << 22;  // 32 MB: beyond it arrivals are counted, not kept
  const int64_t planned = epochs < 0 ? kMaxArrivals : epochs * syncs * per_sync + per_sync;
  recording_.arrivals = std::make_unique<ArrivalBuffer>(static_cast<std::size_t>(std::min(planned, kMaxArrivals)));
  optim_.reducer->record_arrivals(recording_.arrivals.get());
}

// ZeRO-1's arrival is at its one reduce-scatter per optimizer step; DDP's at each bucket.
int64_t Trainer::Run::arrivals_per_sync() const {
  return optim_.shard->sharded() ? 1 : static_cast<int64_t>(optim_.reducer->collectives_per_sync());
}

// The ranks' common clock for arrivals: each rank's steady time right after one barrier,
// which agrees within the barrier's exit skew on any cluster. Ranks on one host share the
// steady clock itself, so there they take rank zero's origin and agree exactly: on a busy
// host the exit skew reaches milliseconds, as much as the lags being measured.
void Trainer::Run::start_arrival_clock() {
  comm_.barrier();
  const auto origin = static_cast<uint64_t>(steady_now_ns());
  const std::vector<uint64_t> origins = comm_.allgather(origin);
  const std::vector<uint64_t> hosts =
      comm_.allgather(static_cast<uint64_t>(std::hash<std::string>{}(comm_.host_name())));
  const bool one_host = std::all_of(hosts.begin(), hosts.end(), [&](uint64_t h) { return h == hosts[0]; });
  recording_.arrivals->set_origin(static_cast<int64_t>(one_host ? origins[0] : origin));
}

void Trainer::Run::finish(LightningModule& module) {
  if (gpu_.training) copy_gpu_to_host(module);
  progress_.finish();
  if (summary_.final_train_loss) {
    summary_.final_train_loss = global_mean({{"train_loss", *summary_.final_train_loss}})[0].second;
  }
  clock_.enter(Phase::kLogging);
  gpu_.phases.attribute(clock_);  // a GPU's timed steps (nothing on CPU)
  summary_.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  summary_.steady_epochs = steady_epochs_.spread();
  summary_.world_size = comm_.size();
  const Strategy ran = options_.strategy == Strategy::kDdpZero1 ? Strategy::kDdpZero1
                       : comm_.size() > 1                       ? Strategy::kDdp
                       : options_.strategy == Strategy::kAuto   ? Strategy::kSingle
                                                                : options_.strategy;
  summary_.strategy = ran;
  summary_.accelerator = gpu_.training ? Accelerator::kCuda : Accelerator::kCpu;
  summary_.gradient_transport = gpu_.transport == GradTransport::kNccl ? GradientTransport::kNccl
                                : comm_.size() > 1                     ? GradientTransport::kMpi
                                                                       : GradientTransport::kNone;
  summary_.training_flops_per_sample = module.network().training_flops_per_sample();
  // Counted while the loader, OpenMP and monitor threads of training still run; gathered after
  // the phases, so that no rank's phases include waiting at this collective.
  const ThreadCensus census = take_thread_census();
  const std::vector<PhaseCalls> phase_calls =
      gather_run_stats(comm_, clock_, optim_.reducer->stats() + optim_.shard->stats(), summary_);
  gather_thread_census(comm_, census, summary_);
  gather_sched_stats(comm_, recording_.sched_start, summary_);
  gather_host_load(comm_, recording_.host_load_start, summary_);
  if (recording_.arrivals) gather_arrivals(comm_, *recording_.arrivals, arrivals_per_sync(), summary_);

  // The end sample, taken before the summary and the trace are written, and logged: every
  // run, however short, ends with a device_<rank>_utilization row in its metrics.
  utilization_->stop();
  const Metrics utilization = utilization_->gather_latest(comm_);
  if (!utilization.empty()) {
    // After the last epoch the loop's counter is one past it.
    const int64_t last_epoch = options_.max_epochs >= 0 ? std::min(epoch(), options_.max_epochs - 1) : epoch();
    outputs_.log_metrics(utilization, last_epoch, std::max<int64_t>(global_step() - 1, 0));
    outputs_.flush();
  }
  summary_.utilization_per_rank = utilization_->gather_series(comm_, start_);
  if (options_.profiler == Profiler::kTrace) write_trace();
  // The model-FLOP share's denominator: this GPU's measured GEMM peak (else, in finish, the core's).
  if (gpu_.training && comm_.rank() == 0) summary_.gemm_peak_flops_per_second = gpu_.training->gemm_peak_flops();
  check_final_parameters(module.network());
  outputs_.finish(module.network(), summary_, phase_calls);
}

// Every rank's spans at rank zero, aligned to rank zero's clock, written as trace.json. Each
// copy is let go as soon as the next is made: a long run's spans are tens of megabytes.
void Trainer::Run::write_trace() {
  RankTrace mine;
  mine.rank = comm_.rank();
  mine.host = comm_.host_name();
  mine.clock_offset_ns = recording_.clock_offset_ns;
  mine.dropped = recording_.spans->dropped() + data_.train_loader->spans_dropped();
  mine.spans = std::move(*recording_.spans).release();
  const std::vector<Span> fills = data_.train_loader->spans();
  mine.spans.insert(mine.spans.end(), fills.begin(), fills.end());  // the loader threads' track
  mine.utilization = utilization_->points();
  std::vector<std::byte> part = serialize_rank_trace(mine);
  mine = {};
  std::vector<std::vector<std::byte>> parts = gather_at_rank_zero(comm_, part);
  part = {};
  if (!is_global_zero()) return;
  std::vector<RankTrace> ranks;
  for (auto& gathered : parts) {
    ranks.push_back(deserialize_rank_trace(gathered));
    gathered = {};
  }
  outputs_.write_trace(ranks, steady_ns(start_));
}

}  // namespace ddp
