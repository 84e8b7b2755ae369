#pragma once
// Averages gradients across ranks in buckets, as PyTorch DDP's Reducer does.
// Per micro-batch:
//   reducer.begin_backward(sync);                       // sync = micro + 1 == accumulate
//   model.backward(x, b, work, reducer.layer_hook());   // full buckets start reducing
//   if (reducer.syncing()) reducer.finish();            // comm_wait: all reduced, averaged
// A micro-batch with sync == false (Lightning's no_sync) communicates nothing; its
// gradients accumulate locally and travel with the next synced micro-batch. On one rank
// the reducer is a no-op (no buckets, an empty layer hook, never syncing), so the training
// step has one shape for any world size and costs nothing extra alone.
//
// Averaging is the transport's (Communicator::allreduce_mean): MPI scales the sum by 1/W in
// the pass that completes it, NCCL would reduce with ncclAvg.
// Overlap: a bucket whose layers are all done starts a nonblocking allreduce at once, and
// every later layer's callback tests the pending ones, which is when MPI moves them on;
// finish() waits for them in order. The last bucket (full only when backward ends) is
// reduced in finish() with the blocking allreduce, which is Open MPI's faster algorithm,
// so a one-bucket model (the seed's 0.5 MB) costs exactly one blocking allreduce.
// Why nonblocking MPI and not a communication thread: measured, not assumed; see
// docs/performance.md ("Allreduce: communicator vs raw MPI"). With one core per rank a
// thread only time-slices with backward and was slower in 6 of 7 runs; bench/
// allreduce_bench.cpp keeps the thread design for re-measuring where ranks have spare cores.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "ddpscope/mlp.h"
#include "dist/bucket_plan.h"
#include "dist/communicator.h"
#include "observe/arrival_buffer.h"
#include "observe/span_buffer.h"

namespace ddp {

// Gradient communication of one rank: allreduce calls, their payload bytes and the
// seconds spent inside communication calls (starting, testing, waiting, blocking).
struct AllreduceStats {
  int64_t calls = 0;
  int64_t bytes = 0;
  double seconds = 0;
  // Of the time allreduces were in flight, the part during which backward was still
  // computing (PyTorch DDP's "overlap"): hidden / in_flight is the share hidden.
  double in_flight_seconds = 0;
  double hidden_seconds = 0;
};

inline AllreduceStats operator+(AllreduceStats a, const AllreduceStats& b) {
  a.calls += b.calls;
  a.bytes += b.bytes;
  a.seconds += b.seconds;
  a.in_flight_seconds += b.in_flight_seconds;
  a.hidden_seconds += b.hidden_seconds;
  return a;
}

struct GradReducerOptions {
  std::size_t bucket_cap_bytes = kDefaultBucketCapBytes;  // --bucket-cap-mb * 2^20
  std::size_t first_bucket_cap_bytes = kDefaultFirstBucketCapBytes;
  bool overlap = true;  // false (--no-overlap): one allreduce of the whole buffer after backward
};

class GradReducer {
 public:
  // Reduces model.grads() in place; comm and model must outlive the reducer.
  GradReducer(Communicator& comm, Mlp& model, const GradReducerOptions& options = {});

  // No other collective on comm between begin_backward(true) and finish(): bucket
  // allreduces may be in flight.
  void begin_backward(bool sync);
  // Backward's callback: layer l's gradients are final (l = L-1 down to 0, each once).
  void on_layer_done(int64_t layer);
  // Empty on one rank: backward then makes no call per layer.
  std::function<void(int64_t)> layer_hook() {
    if (comm_.size() == 1) return {};
    return [this](int64_t layer) { on_layer_done(layer); };
  }
  // Between begin_backward(true) and finish() with more than one rank: there is
  // communication to wait for.
  bool syncing() const { return sync_; }
  // After backward: returns once every rank's gradients are averaged (at once when the
  // micro-batch did not sync).
  void finish();

  const std::vector<GradBucket>& buckets() const { return buckets_; }
  // Collectives per synchronising backward: one per bucket, or one with --no-overlap.
  std::size_t collectives_per_sync() const { return options_.overlap ? buckets_.size() : (buckets_.empty() ? 0 : 1); }
  std::size_t num_buckets() const { return buckets_.size(); }
  bool overlap() const { return options_.overlap; }
  const AllreduceStats& stats() const { return stats_; }
  // Records each allreduce as a span on the comm track (--profiler trace).
  void record_spans(SpanBuffer* spans) { spans_ = spans; }
  // Records when this rank starts each collective (its arrival), for the straggler analysis.
  void record_arrivals(ArrivalBuffer* arrivals) { arrivals_ = arrivals; }

 private:
  struct InFlight {
    std::span<float> slice;
    std::unique_ptr<PendingAllreduce> request;
    int64_t start_ns;
  };
  void record(int64_t start_ns, int64_t end_ns, std::size_t bytes, int64_t backward_end_ns);

  std::span<float> slice(const GradBucket& bucket) const {
    return grads_.subspan(bucket.begin, bucket.end - bucket.begin);
  }
  void count(std::span<float> slice, double seconds);
  void arrive(int64_t steady_ns) {
    if (arrivals_ != nullptr) arrivals_->add(steady_ns);
  }

  Communicator& comm_;
  std::span<float> grads_;
  int64_t num_layers_;
  GradReducerOptions options_;
  std::vector<GradBucket> buckets_;

  bool sync_ = false;
  int64_t next_layer_ = -1;      // the layer backward must report next
  std::size_t next_bucket_ = 0;  // the bucket that layer belongs to
  std::vector<InFlight> in_flight_;
  AllreduceStats stats_;
  SpanBuffer* spans_ = nullptr;
  ArrivalBuffer* arrivals_ = nullptr;
};

}  // namespace ddp
