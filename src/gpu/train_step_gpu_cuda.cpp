#include "gpu/train_step_gpu.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "base/check.h"
#include "ddpscope/error.h"
#include "gpu/cuda_check.h"
#include "gpu/mse_loss_gpu.h"
#include "gpu/optimizer_step_gpu.h"
#include "optim/update_scalars.h"
#include "tensor/mse_rule.h"

namespace ddp {
namespace {

std::size_t floats(int64_t rows, int64_t width) { return static_cast<std::size_t>(rows * width); }

bool is_adam(const OptimizerConfig& config) { return config.kind != OptimizerKind::kSgd; }
bool has_momentum(const OptimizerConfig& config) { return !is_adam(config) && config.momentum != 0.0; }

LtMath lt_math(Precision precision) {
  switch (precision) {
    case Precision::k32True:
      return LtMath::kFp32;
    case Precision::kTf32:
      return LtMath::kTf32;
    case Precision::kBf16Mixed:
      return LtMath::kBf16;
  }
  return LtMath::kFp32;
}

}  // namespace

GpuTrainStep::GpuTrainStep(const GpuStepSpec& spec, std::span<const float> params, NcclComm* nccl)
    : spec_(spec),
      nccl_(nccl),
      layers_(layer_layout(spec.shape)),
      num_params_(static_cast<int64_t>(parameter_count(layers_))),
      update_begin_(spec.update_begin),
      update_count_(spec.update_count < 0 ? num_params_ : spec.update_count),
      lt_(lt_math(spec.precision)),
      params_(static_cast<std::size_t>(num_params_)),
      grads_(static_cast<std::size_t>(num_params_)),
      state0_(is_adam(spec.optimizer) || has_momentum(spec.optimizer) ? static_cast<std::size_t>(update_count_) : 0),
      state1_(is_adam(spec.optimizer) ? static_cast<std::size_t>(update_count_) : 0),
      activations_(spec.shape, spec.batch_size),
      samples_(spec.data, spec.shape.input_dim, spec.shape.output_dim),
      x_(floats(spec.batch_size, spec.shape.input_dim)),
      y_(floats(spec.batch_size, spec.shape.output_dim)),
      order_(static_cast<std::size_t>(spec.data.size)),
      cursor_(1),
      adam_table_(is_adam(spec.optimizer) ? static_cast<std::size_t>(spec.max_epoch_steps) : 0),
      sgd_table_(is_adam(spec.optimizer) ? 0 : static_cast<std::size_t>(spec.max_epoch_steps)),
      sum_squares_(static_cast<std::size_t>(spec.max_epoch_steps * spec.accumulate)),
      in_order_(static_cast<std::size_t>(spec.data.size)),
      val_cursor_(1),
      val_sum_squares_(1),
      val_nonfinite_(1),
      host_grads_(spec.reduce_gradients ? static_cast<std::size_t>(num_params_) : 0),
      host_params_(spec.gather_params ? static_cast<std::size_t>(num_params_) : 0),
      allreduces_after_layer_(
          nccl != nullptr && spec.shard_counts.empty()
              ? allreduces_after_layer(plan_gpu_step(spec.buckets, spec.shape.num_layers(), 1, GradTransport::kNccl),
                                       spec.shape.num_layers())
              : std::vector<std::vector<int64_t>>{}),
      bucket_done_(spec.buckets.size()),
      timer_(spec.accumulate) {
  DDP_CHECK_GT(spec.batch_size, 0);
  DDP_CHECK_GT(spec.accumulate, 0);
  DDP_CHECK_EQ(params.size(), static_cast<std::size_t>(num_params_));
  DDP_CHECK(update_begin_ >= 0 && update_begin_ + update_count_ <= num_params_, "a range of the parameters");
  DDP_CHECK(update_count_ == num_params_ || (spec.reduce_gradients && spec.gather_params) || sharded_over_nccl(),
            "a sharded update needs the ranks' reduce-scatter and all-gather");
  DDP_CHECK(
      nccl == nullptr || (!spec.reduce_gradients && spec.nccl_timeout_s > 0 &&
                          (sharded_over_nccl() || (!spec.buckets.empty() && spec.buckets.back().first_layer == 0))),
      "one transport, buckets down to the first layer, and a bound on its waits");
  DDP_CHECK(!sharded_over_nccl() ||
                std::accumulate(spec.shard_counts.begin(), spec.shard_counts.end(), int64_t{0}) == num_params_,
            "ranges that cover the parameters");
  params_.copy_from(params.data(), params.size());
  DDP_CHECK(spec.world > 0 && spec.rank >= 0 && spec.rank < spec.world, "a rank of the world");
  std::vector<int64_t> validation;
  for (int64_t i = spec.rank; i < spec.data.size; i += spec.world) validation.push_back(i);
  in_order_.copy_from(validation.data(), validation.size());
  validation_samples_ = static_cast<int64_t>(validation.size());
}

void GpuTrainStep::load_optimizer_state(const std::vector<std::span<const float>>& state) {
  std::vector<DeviceArray<float>*> buffers;
  for (DeviceArray<float>* buffer : {&state0_, &state1_}) {
    if (buffer->count() > 0) buffers.push_back(buffer);
  }
  DDP_CHECK_EQ(state.size(), buffers.size(), "a state of another optimizer");
  for (std::size_t i = 0; i < state.size(); ++i) {
    DDP_CHECK_EQ(state[i].size(), buffers[i]->count(), "a state of another model");
    buffers[i]->copy_from(state[i].data(), state[i].size());
  }
}

void GpuTrainStep::start_epoch(int64_t epoch, std::span<const int64_t> order, int64_t steps_before,
                               int64_t steps_in_epoch) {
  DDP_CHECK_LE(static_cast<int64_t>(order.size()), spec_.data.size, "an epoch longer than allocated for");
  DDP_CHECK_LE(steps_in_epoch, spec_.max_epoch_steps, "an epoch of more steps than allocated for");
  timed_marks_ = 0;  // a timed step not taken is dropped with its reference
  wait();            // the last epoch's steps read what follows
  timer_.reference(stream_.get());
  order_.copy_from(order.data(), order.size());
  const StepCursor cursor{samples_.counter_hi(epoch), 0, 0};
  cursor_.copy_from(&cursor, 1);
  check_cuda(cudaMemset(sum_squares_.data(), 0, sum_squares_.count() * sizeof(double)), "cudaMemset");
  // The optimizer's scalars for each of the epoch's steps, as the host optimizers compute them.
  if (is_adam(spec_.optimizer)) {
    std::vector<AdamScalars> table;
    for (int64_t i = 0; i < steps_in_epoch; ++i) table.push_back(adam_scalars(spec_.optimizer, steps_before + i + 1));
    adam_table_.copy_from(table.data(), table.size());
  } else {
    std::vector<SgdScalars> table;
    for (int64_t i = 0; i < steps_in_epoch; ++i) table.push_back(sgd_scalars(spec_.optimizer, steps_before + i));
    sgd_table_.copy_from(table.data(), table.size());
  }
  order_size_ = static_cast<int64_t>(order.size());
  steps_in_epoch_ = steps_in_epoch;
  micro_batches_taken_ = steps_taken_ = 0;
}

void GpuTrainStep::step(const std::vector<int64_t>& sizes, bool timed) {
  DDP_CHECK(!sizes.empty() && static_cast<int64_t>(sizes.size()) <= spec_.accumulate,
            "a step of 1 to accumulate micro-batches");
  for (const int64_t size : sizes) DDP_CHECK(size > 0 && size <= spec_.batch_size, "a micro-batch of 1 to batch_size");
  const auto count = static_cast<int64_t>(sizes.size());
  DDP_CHECK_LT(steps_taken_, steps_in_epoch_, "a step past the epoch's last");
  DDP_CHECK_LE((micro_batches_taken_ + count - 1) * spec_.batch_size + sizes.back(), order_size_,
               "micro-batches past the end of the epoch's order");
  micro_batches_taken_ += count;
  ++steps_taken_;
  if (spec_.reduce_gradients) {
    step_through_host(sizes);  // never timed: its copies and the ranks' wait are the host's
    ++steps_run_;
    return;
  }

  const bool time_it = timed && timed_marks_ == 0 && steps_run_ > 0;
  const StepTimer* timer = time_it ? &timer_ : nullptr;
  bool as_graph = false;
  if (spec_.cuda_graph) {
    as_graph = (time_it ? timed_graphs_ : step_graphs_).run(sizes, stream_.get(), [&] { enqueue_step(sizes, timer); });
  } else {
    enqueue_step(sizes, timer);
  }
  if (time_it && (as_graph || !spec_.cuda_graph)) timed_marks_ = device_step_mark_count(count);
  ++steps_run_;
}

std::optional<DeviceStepMarks> GpuTrainStep::take_timed_step() {
  if (timed_marks_ == 0) return std::nullopt;
  wait();
  return timer_.read(std::exchange(timed_marks_, 0));
}

void GpuTrainStep::enqueue_step(const std::vector<int64_t>& sizes, const StepTimer* timer) {
  std::size_t next_mark = 0;
  enqueue_gradients(sizes, timer, next_mark);
  // ZeRO-1 over NCCL: none of it overlaps backward, as on CPU (dist/optimizer_shard.h).
  if (sharded_over_nccl()) nccl_->reduce_scatter_mean(grads_.data(), spec_.shard_counts, stream_.get());
  enqueue_update(static_cast<int64_t>(sizes.size()));
  if (sharded_over_nccl()) nccl_->allgather_ranges(params_.data(), spec_.shard_counts, stream_.get());
  if (timer != nullptr) timer->mark(stream_.get(), next_mark++);
}

void GpuTrainStep::enqueue_gradients(const std::vector<int64_t>& sizes, const StepTimer* timer,
                                     std::size_t& next_mark) {
  const auto mark = [&] {
    if (timer != nullptr) timer->mark(stream_.get(), next_mark++);
  };
  mark();
  check_cuda(cudaMemsetAsync(grads_.data(), 0, grads_.count() * sizeof(float), stream_.get()), "cudaMemsetAsync");
  mark();
  const int64_t out = spec_.shape.output_dim;
  const GpuActivations& act = activations_.view();
  for (std::size_t j = 0; j < sizes.size(); ++j) {
    const int64_t b = sizes[j];
    samples_.enqueue(cursor_.data(), order_.data(), static_cast<int64_t>(j), spec_.batch_size, b, x_.data(), y_.data(),
                     stream_.get());
    mark();
    const float* pred = mlp_forward_gpu(lt_, layers_, params_.data(), x_.data(), b, act, stream_.get());
    const float loss_scale = 1.0f / static_cast<float>(spec_.accumulate);  // Lightning divides by k
    launch_mse_loss_at(pred, y_.data(), act.gradient, b * out, mse_gradient_scale(loss_scale, b * out), cursor_.data(),
                       static_cast<int64_t>(j), sum_squares_.data(), stream_.get());
    mark();
    if (nccl_ != nullptr && !sharded_over_nccl() && j + 1 == sizes.size()) {  // before it: accumulate only
      mlp_backward_gpu(lt_, layers_, params_.data(), grads_.data(), x_.data(), b, act, stream_.get(),
                       [&](int64_t layer) { start_bucket_allreduces(layer); });
      allreduces_done_.order(comm_stream_.get(), stream_.get());
    } else {
      mlp_backward_gpu(lt_, layers_, params_.data(), grads_.data(), x_.data(), b, act, stream_.get());
    }
    mark();
  }
}

void GpuTrainStep::start_bucket_allreduces(int64_t layer) {
  for (const int64_t b : allreduces_after_layer_[static_cast<std::size_t>(layer)]) {
    const GradBucket& bucket = spec_.buckets[static_cast<std::size_t>(b)];
    bucket_done_[static_cast<std::size_t>(b)].order(stream_.get(), comm_stream_.get());
    nccl_->allreduce_mean(grads_.data() + bucket.begin, bucket.end - bucket.begin, comm_stream_.get());
  }
}

void GpuTrainStep::wait() {
  if (nccl_ != nullptr) {
    nccl_->synchronize(
        stream_.get(), spec_.nccl_timeout_s, [this] { release_graphs(); }, [this] { return steps_done_.read(); });
  } else {
    check_cuda(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize");
  }
}

void GpuTrainStep::release_graphs() {
  step_graphs_.clear();
  timed_graphs_.clear();
}

void GpuTrainStep::enqueue_update(int64_t micro_batches) {
  enqueue_optimizer();
  launch_advance_cursor(cursor_.data(), micro_batches, steps_done_.device_count(), steps_done_.host_on_device(),
                        stream_.get());
}

// The host-memory transport: the gradients part as one graph (or eagerly), the ranks' average
// on the host, then the update's two kernels; with ZeRO-1, the parameters' all-gather after.
void GpuTrainStep::step_through_host(const std::vector<int64_t>& sizes) {
  std::size_t no_marks = 0;
  if (spec_.cuda_graph) {
    gradient_graphs_.run(sizes, stream_.get(), [&] { enqueue_gradients(sizes, nullptr, no_marks); });
  } else {
    enqueue_gradients(sizes, nullptr, no_marks);
  }
  const std::size_t bytes = host_grads_.size() * sizeof(float);
  check_cuda(cudaMemcpyAsync(host_grads_.data(), grads_.data(), bytes, cudaMemcpyDeviceToHost, stream_.get()),
             "cudaMemcpyAsync of the gradients to the host");
  check_cuda(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize");
  spec_.reduce_gradients(host_grads_);
  // From pageable memory the copy has taken host_grads_ by the time it returns.
  check_cuda(cudaMemcpyAsync(grads_.data(), host_grads_.data(), bytes, cudaMemcpyHostToDevice, stream_.get()),
             "cudaMemcpyAsync of the averaged gradients to the device");
  enqueue_update(static_cast<int64_t>(sizes.size()));
  if (!spec_.gather_params) return;
  // ZeRO-1: this rank's updated range out, every range back in.
  const std::size_t mine = static_cast<std::size_t>(update_count_) * sizeof(float);
  check_cuda(cudaMemcpyAsync(host_params_.data() + update_begin_, params_.data() + update_begin_, mine,
                             cudaMemcpyDeviceToHost, stream_.get()),
             "cudaMemcpyAsync of the updated parameters to the host");
  check_cuda(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize");
  spec_.gather_params(host_params_);
  check_cuda(cudaMemcpyAsync(params_.data(), host_params_.data(), host_params_.size() * sizeof(float),
                             cudaMemcpyHostToDevice, stream_.get()),
             "cudaMemcpyAsync of the gathered parameters to the device");
}

void GpuTrainStep::enqueue_optimizer() {
  if (is_adam(spec_.optimizer)) {
    launch_adam_step_at(adam_table_.data(), cursor_.data(), params_.data() + update_begin_,
                        grads_.data() + update_begin_, state0_.data(), state1_.data(), update_count_, stream_.get());
  } else {
    launch_sgd_step_at(sgd_table_.data(), cursor_.data(), params_.data() + update_begin_, grads_.data() + update_begin_,
                       has_momentum(spec_.optimizer) ? state0_.data() : nullptr, update_count_, stream_.get());
  }
}

std::vector<double> GpuTrainStep::epoch_sum_squares() {
  wait();
  std::vector<double> sums = sum_squares_.to_host();
  sums.resize(static_cast<std::size_t>(micro_batches_taken_));
  return sums;
}

GpuLossTotals GpuTrainStep::validate(int64_t epoch, int64_t samples) {
  DDP_CHECK(samples > 0 && samples <= validation_samples_, "validation of 1 to the rank's validation samples");
  wait();  // the last pass reads these
  const StepCursor cursor{samples_.counter_hi(epoch), 0, 0};
  val_cursor_.copy_from(&cursor, 1);
  check_cuda(cudaMemset(val_sum_squares_.data(), 0, sizeof(double)), "cudaMemset");
  check_cuda(cudaMemset(val_nonfinite_.data(), 0, sizeof(int)), "cudaMemset");
  if (spec_.cuda_graph) {
    val_graphs_.run(samples, stream_.get(), [&] { enqueue_validation(samples); });
  } else {
    enqueue_validation(samples);
  }
  check_cuda(cudaStreamSynchronize(stream_.get()), "cudaStreamSynchronize");
  return {val_sum_squares_.to_host()[0], val_nonfinite_.to_host()[0] != 0};
}

void GpuTrainStep::enqueue_validation(int64_t samples) {
  const int64_t out = spec_.shape.output_dim;
  const GpuActivations& act = activations_.view();
  for (int64_t j = 0; j * spec_.batch_size < samples; ++j) {
    const int64_t b = std::min(spec_.batch_size, samples - j * spec_.batch_size);
    samples_.enqueue(val_cursor_.data(), in_order_.data(), j, spec_.batch_size, b, x_.data(), y_.data(), stream_.get());
    const float* pred = mlp_forward_gpu(lt_, layers_, params_.data(), x_.data(), b, act, stream_.get());
    // The kernel's gradient goes to the activations' scratch, unread: validation only sums.
    launch_mse_loss_and_gradient(pred, y_.data(), act.gradient, b * out, 1.0f, val_sum_squares_.data(),
                                 val_nonfinite_.data(), stream_.get());
  }
}

double GpuTrainStep::gemm_peak_flops() {
  constexpr int64_t kSize = 4096;  // 137 GFLOP: milliseconds, and the library's largest tiles
  constexpr int kRepeats = 5;
  wait();
  const std::size_t bytes = static_cast<std::size_t>(kSize * kSize) * sizeof(float);
  const DeviceArray<float> a(kSize * kSize), b(kSize * kSize), c(kSize * kSize);
  // Not zeros, which a GPU multiplies at less power and so at a higher clock: 0x3c3c3c3c, 0.0115.
  check_cuda(cudaMemset(a.data(), 0x3c, bytes), "cudaMemset");
  check_cuda(cudaMemset(b.data(), 0x3c, bytes), "cudaMemset");
  const auto gemm = [&] {
    lt_.gemm(Trans::kNo, Trans::kNo, kSize, kSize, kSize, a.data(), kSize, b.data(), kSize, 0.0f, c.data(), kSize,
             nullptr, stream_.get());
  };
  gemm();  // plans the shape
  const CudaEvent start(CudaEvent::Timing::kOn), end(CudaEvent::Timing::kOn);
  double best = 0;
  for (int i = 0; i < kRepeats; ++i) {
    start.record(stream_.get());
    gemm();
    end.record(stream_.get());
    best = std::max(best, 2.0 * kSize * kSize * kSize / end.seconds_after(start));
  }
  return best;
}

std::vector<float> GpuTrainStep::params() {
  wait();
  return params_.to_host();
}

std::vector<std::vector<float>> GpuTrainStep::optimizer_state() {
  wait();
  std::vector<std::vector<float>> state;
  if (state0_.count() > 0) state.push_back(state0_.to_host());
  if (state1_.count() > 0) state.push_back(state1_.to_host());
  return state;
}

}  // namespace ddp
