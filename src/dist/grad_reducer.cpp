#include "dist/grad_reducer.h"

#include <algorithm>
#include <chrono>

#include "base/check.h"
#include "ddpscope/error.h"

namespace ddp {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

GradReducer::GradReducer(Communicator& comm, Mlp& model, const GradReducerOptions& options)
    : comm_(comm),
      grads_(model.grads()),
      num_layers_(static_cast<int64_t>(model.layers().size())),
      options_(options),
      buckets_(comm.size() == 1
                   ? std::vector<GradBucket>{}
                   : plan_buckets(model.layers(), options.bucket_cap_bytes, options.first_bucket_cap_bytes)) {
  DDP_CHECK_GT(options.bucket_cap_bytes, 0u);
  DDP_CHECK_GT(options.first_bucket_cap_bytes, 0u);
  DDP_CHECK(comm.size() == 1 || (buckets_.front().end == grads_.size() && buckets_.back().begin == 0));
  in_flight_.reserve(buckets_.size());
}

void GradReducer::begin_backward(bool sync) {
  DDP_CHECK_LT(next_layer_, 0, "begin_backward() before the previous synced backward's finish()");
  sync_ = sync && comm_.size() > 1;  // alone there is nothing to average
  if (!sync_) return;
  next_layer_ = num_layers_ - 1;
  next_bucket_ = 0;
}

void GradReducer::on_layer_done(int64_t layer) {
  if (!sync_) return;
  DDP_CHECK_EQ(layer, next_layer_, "backward must report layers L-1 down to 0, each once");
  --next_layer_;
  if (!options_.overlap) return;
  const auto start = std::chrono::steady_clock::now();
  for (InFlight& f : in_flight_) f.request->test();  // progress for the ones in flight
  const GradBucket& bucket = buckets_[next_bucket_];
  if (layer == bucket.first_layer) {
    const bool last = ++next_bucket_ == buckets_.size();
    if (!last) {  // finish() reduces the last one with the blocking allreduce
      const int64_t started = steady_now_ns();
      arrive(started);
      in_flight_.push_back({slice(bucket), comm_.allreduce_mean_async(slice(bucket)), started});
      ++stats_.calls;
      stats_.bytes += static_cast<int64_t>(bucket.bytes());
    }
  }
  stats_.seconds += seconds_since(start);
}

void GradReducer::finish() {
  if (!sync_) return;
  DDP_CHECK_EQ(next_layer_, -1, "finish() before backward reported every layer");
  sync_ = false;
  const int64_t backward_end = steady_now_ns();
  if (!options_.overlap) {
    const auto start = std::chrono::steady_clock::now();
    arrive(steady_ns(start));
    comm_.allreduce_mean(grads_);
    count(grads_, seconds_since(start));
    record(steady_ns(start), steady_now_ns(), grads_.size_bytes(), backward_end);
    return;
  }
  for (InFlight& f : in_flight_) {
    const auto start = std::chrono::steady_clock::now();
    f.request->wait();
    stats_.seconds += seconds_since(start);
    record(f.start_ns, steady_now_ns(), f.slice.size_bytes(), backward_end);
  }
  in_flight_.clear();
  const std::span<float> last = slice(buckets_.back());
  const auto start = std::chrono::steady_clock::now();
  arrive(steady_ns(start));
  comm_.allreduce_mean(last);
  count(last, seconds_since(start));
  record(steady_ns(start), steady_now_ns(), last.size_bytes(), backward_end);
}

// An allreduce from start to end; the part before backward ended was hidden behind it.
void GradReducer::record(int64_t start_ns, int64_t end_ns, std::size_t bytes, int64_t backward_end_ns) {
  const int64_t hidden = std::max<int64_t>(0, std::min(end_ns, backward_end_ns) - start_ns);
  stats_.in_flight_seconds += (end_ns - start_ns) * 1e-9;
  stats_.hidden_seconds += hidden * 1e-9;
  if (spans_ != nullptr) {
    spans_->add({start_ns, end_ns, kAllreduceSpan, TraceThread::kComm, static_cast<int64_t>(bytes), hidden});
  }
}

void GradReducer::count(std::span<float> slice, double seconds) {
  ++stats_.calls;
  stats_.bytes += static_cast<int64_t>(slice.size_bytes());
  stats_.seconds += seconds;
}

}  // namespace ddp
