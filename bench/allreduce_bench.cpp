// Allreduce through the Communicator vs raw MPI_Allreduce, and the overlap design of the
// gradient reducer, measured between ranks. A plain main(): Google Benchmark times one
// process, and an allreduce's time is the ranks' time together.
//
//   mpirun -np 2 --bind-to core --allow-run-as-root build/release/bench/allreduce_bench
//   ... allreduce_bench --overlap     the reducer's overlap designs on the seed's MLP
//   ... allreduce_bench --raw-single  raw MPI_Allreduce only, MPI_THREAD_SINGLE
//
// Sizes are float counts 1 .. 2^21 (4 B .. 8 MiB) plus the seed's 134,657 gradients.
// Each size: 15 rounds alternating communicator and raw, each round >= 20 ms of calls;
// the time of a round is the slowest rank's; the table shows the median round. algbw =
// bytes / time and busbw = algbw * 2(n-1)/n, as nccl-tests define them.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "ddpscope/mlp.h"
#include "dist/grad_reducer.h"
#include "dist/mpi_c.h"
#include "dist/mpi_communicator.h"
#include "tensor/kernels.h"

namespace ddp {
namespace {

constexpr int kRounds = 15;
constexpr double kRoundSeconds = 0.02;

double now() { return MPI_Wtime(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Seconds per call of op(), the slowest rank's, after agreeing on a repetition count.
double time_per_call(const std::function<void()>& op, MPI_Comm comm) {
  op();  // warm up
  double t0 = now();
  op();
  double once = now() - t0;
  MPI_Allreduce(MPI_IN_PLACE, &once, 1, MPI_DOUBLE, MPI_MAX, comm);
  const int reps = std::max(1, static_cast<int>(kRoundSeconds / std::max(once, 1e-7)));
  MPI_Barrier(comm);
  t0 = now();
  for (int i = 0; i < reps; ++i) op();
  double per_call = (now() - t0) / reps;
  MPI_Allreduce(MPI_IN_PLACE, &per_call, 1, MPI_DOUBLE, MPI_MAX, comm);
  return per_call;
}

std::vector<std::size_t> sizes() {
  std::vector<std::size_t> out;
  for (std::size_t n = 1; n <= (std::size_t{1} << 21); n *= 2) out.push_back(n);
  out.push_back(134657);
  std::sort(out.begin(), out.end());
  return out;
}

void print_row(std::size_t n, double seconds, int w, const char* extra) {
  const double bytes = static_cast<double>(n * sizeof(float));
  const double algbw = bytes / seconds / 1e9;
  std::printf("| %zu | %zu | %.2f | %.3f | %.3f |%s\n", static_cast<std::size_t>(bytes), n, seconds * 1e6, algbw,
              algbw * 2.0 * (w - 1) / w, extra);
}

void bench_communicator_vs_raw() {
  auto comm = make_mpi_communicator();
  MPI_Comm raw;
  MPI_Comm_dup(MPI_COMM_WORLD, &raw);
  const int w = comm->size();
  // One buffer for both, so that neither gets the better pages or cache state.
  std::vector<float> a(std::size_t{1} << 21, 1e-3f);
  if (comm->rank() == 0) {
    std::printf(
        "ranks %d\n| bytes | floats | communicator us | algbw GB/s | busbw GB/s | raw MPI us | raw busbw GB/s | "
        "communicator / raw speed |\n|---|---|---|---|---|---|---|---|\n",
        w);
  }
  for (std::size_t n : sizes()) {
    std::vector<double> ours, theirs;
    for (int round = 0; round < kRounds; ++round) {
      ours.push_back(time_per_call([&] { comm->allreduce_sum(std::span<float>(a.data(), n)); }, raw));
      theirs.push_back(time_per_call(
          [&] { MPI_Allreduce(MPI_IN_PLACE, a.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, raw); }, raw));
    }
    if (comm->rank() == 0) {
      const double t = median(ours), r = median(theirs);
      char extra[160];
      const double raw_algbw = n * sizeof(float) / r / 1e9;
      std::snprintf(extra, sizeof(extra), " %.2f | %.3f | %.1f %% |", r * 1e6, raw_algbw * 2.0 * (w - 1) / w,
                    100.0 * r / t);
      print_row(n, t, w, extra);
    }
  }
  MPI_Comm_free(&raw);
}

void bench_raw_single() {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SINGLE, &provided);
  int rank = 0, w = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w);
  std::vector<float> b(std::size_t{1} << 21, 1e-3f);
  if (rank == 0)
    std::printf(
        "raw MPI_Allreduce, MPI_THREAD_SINGLE, ranks %d\n| bytes | floats | us | algbw | busbw "
        "|\n|---|---|---|---|---|\n",
        w);
  for (std::size_t n : sizes()) {
    std::vector<double> t;
    for (int round = 0; round < kRounds; ++round) {
      t.push_back(time_per_call(
          [&] { MPI_Allreduce(MPI_IN_PLACE, b.data(), static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); },
          MPI_COMM_WORLD));
    }
    if (rank == 0) print_row(n, median(t), w, "");
  }
  MPI_Finalize();
}

// One training micro-batch of the seed's MLP (batch 256 per rank) with its gradients
// reduced in buckets by one of the designs; the bucket cap makes one bucket per layer so
// that there is something to overlap: 257, 65,792, 65,792 and 2,816 floats.
class OverlapBench {
 public:
  OverlapBench(Communicator& comm)
      : comm_(comm), model_(MlpShape{}), work_(MlpShape{}, kBatch), x_(kBatch * 10), y_(kBatch) {
    model_.init_like_pytorch(1);
    for (std::size_t i = 0; i < x_.size(); ++i) x_[i] = std::sin(0.1f * i + comm.rank());
    for (std::size_t i = 0; i < y_.size(); ++i) y_[i] = std::cos(0.3f * i);
    MPI_Comm_dup(MPI_COMM_WORLD, &raw_);
    buckets_ = plan_buckets(model_.layers(), kCap, kCap);
  }
  ~OverlapBench() { MPI_Comm_free(&raw_); }

  void forward() {
    model_.zero_grads();
    model_.forward(x_.data(), kBatch, work_);
    mse_loss_gradient(work_.output(), y_.data(), work_.output_gradient(), kBatch, 1, 1.0f);
  }
  void compute_only() {
    forward();
    model_.backward(x_.data(), kBatch, work_);
  }
  void reducer_step(GradReducer& reducer) {
    forward();
    reducer.begin_backward(true);
    model_.backward(x_.data(), kBatch, work_, reducer.layer_hook());
    reducer.finish();
  }
  // The alternative design: a communication thread runs the blocking MPI_Allreduce of
  // each full bucket while backward continues on this thread; the last bucket is
  // reduced here after the thread is done, as GradReducer does.
  void thread_step() {
    forward();
    std::size_t next = 0;
    model_.backward(x_.data(), kBatch, work_, [&](int64_t layer) {
      if (layer != buckets_[next].first_layer) return;
      if (++next == buckets_.size()) return;
      {
        std::lock_guard lock(mutex_);
        ++queued_;
      }
      wake_comm_.notify_one();
    });
    {
      std::unique_lock lock(mutex_);
      wake_training_.wait(lock, [&] { return done_ == queued_; });
      queued_ = started_ = done_ = 0;
    }
    reduce(buckets_.back());
  }
  void start_thread() {
    comm_thread_ = std::thread([this] {
      for (;;) {
        std::size_t index = 0;
        {
          std::unique_lock lock(mutex_);
          wake_comm_.wait(lock, [&] { return stop_ || started_ < queued_; });
          if (started_ == queued_) return;
          index = started_++;
        }
        reduce(buckets_[index]);
        {
          std::lock_guard lock(mutex_);
          ++done_;
        }
        wake_training_.notify_one();
      }
    });
  }
  void stop_thread() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_comm_.notify_one();
    comm_thread_.join();
  }
  void reduce(const GradBucket& b) {
    float* g = model_.grads().data() + b.begin;
    MPI_Allreduce(MPI_IN_PLACE, g, static_cast<int>(b.end - b.begin), MPI_FLOAT, MPI_SUM, raw_);
    const float inverse = 1.0f / comm_.size();
    for (std::size_t i = 0; i < b.end - b.begin; ++i) g[i] *= inverse;
  }
  Mlp& model() { return model_; }
  MPI_Comm raw() const { return raw_; }
  static constexpr std::size_t kCap = 128 * 1024;

 private:
  static constexpr int64_t kBatch = 256;
  Communicator& comm_;
  Mlp model_;
  Workspace work_;
  std::vector<float> x_, y_;
  MPI_Comm raw_;
  std::vector<GradBucket> buckets_;
  std::mutex mutex_;
  std::condition_variable wake_comm_, wake_training_;
  std::size_t queued_ = 0, started_ = 0, done_ = 0;
  bool stop_ = false;
  std::thread comm_thread_;
};

void bench_overlap() {
  auto comm = make_mpi_communicator();
  OverlapBench bench(*comm);
  GradReducer after(
      *comm, bench.model(),
      {.bucket_cap_bytes = OverlapBench::kCap, .first_bucket_cap_bytes = OverlapBench::kCap, .overlap = false});
  GradReducer overlapped(
      *comm, bench.model(),
      {.bucket_cap_bytes = OverlapBench::kCap, .first_bucket_cap_bytes = OverlapBench::kCap, .overlap = true});
  bench.start_thread();
  GradReducer one_bucket(*comm, bench.model(), {});
  std::vector<double> compute, blocking, thread, nonblocking, seed_default;
  std::vector<float> grads(bench.model().num_params(), 1e-3f);
  std::vector<double> allreduce_alone;
  for (int round = 0; round < 15; ++round) {
    compute.push_back(time_per_call([&] { bench.compute_only(); }, bench.raw()));
    allreduce_alone.push_back(time_per_call([&] { comm->allreduce_sum(std::span<float>(grads)); }, bench.raw()));
    blocking.push_back(time_per_call([&] { bench.reducer_step(after); }, bench.raw()));
    nonblocking.push_back(time_per_call([&] { bench.reducer_step(overlapped); }, bench.raw()));
    thread.push_back(time_per_call([&] { bench.thread_step(); }, bench.raw()));
    seed_default.push_back(time_per_call([&] { bench.reducer_step(one_bucket); }, bench.raw()));
  }
  bench.stop_thread();
  if (comm->rank() == 0) {
    std::printf(
        "seed MLP, batch 256 per rank, %d ranks, %zu buckets of <= 128 KiB (one per layer); us per micro-batch, "
        "median of 15 interleaved rounds\n",
        comm->size(), overlapped.num_buckets());
    std::printf("| design | us | over compute alone |\n|---|---|---|\n");
    const double c = median(compute);
    auto row = [&](const char* name, double t) {
      std::printf("| %s | %.1f | %+.1f |\n", name, t * 1e6, (t - c) * 1e6);
    };
    row("forward+backward, no communication", c);
    row("allreduce of all 538,628 B alone", median(allreduce_alone));
    row("no overlap: one allreduce after backward", median(blocking));
    row("GradReducer overlap: MPI_Iallreduce per bucket + MPI_Test per layer", median(nonblocking));
    row("communication thread, blocking MPI_Allreduce per bucket", median(thread));
    row("GradReducer defaults (25 MiB cap, 1 MiB first: one bucket)", median(seed_default));
  }
}

}  // namespace
}  // namespace ddp

int main(int argc, char** argv) {
  const bool overlap = argc > 1 && std::strcmp(argv[1], "--overlap") == 0;
  const bool raw_single = argc > 1 && std::strcmp(argv[1], "--raw-single") == 0;
  if (raw_single) {
    ddp::bench_raw_single();
  } else if (overlap) {
    ddp::bench_overlap();
  } else {
    ddp::bench_communicator_vs_raw();
  }
  return 0;
}
