#include "dist/mpi_communicator.h"

#include <unistd.h>
#include "base/check.h"
#include "dist/mpi_c.h"

#include <fmt/format.h>
#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>

#include "ddpscope/error.h"
#include "dist/comm_watchdog.h"
#include "dist/mpi_error.h"

namespace ddp {
namespace {

// MPI counts are int: larger spans go in chunks.
constexpr std::size_t kMaxCount = std::size_t{1} << 30;

bool has_env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0';
}

// Holds the watchdog armed while a thread blocks in MPI.
class Armed {
 public:
  Armed(CommWatchdog& watchdog, int64_t number, const char* operation) : watchdog_(watchdog) {
    watchdog_.arm(number, operation);
  }
  ~Armed() { watchdog_.disarm(); }
  Armed(const Armed&) = delete;
  Armed& operator=(const Armed&) = delete;

 private:
  CommWatchdog& watchdog_;
};

// data *= 1/W: the mean from the sum, in the pass that follows the reduction.
void scale_to_mean(std::span<float> data, int world) {
  if (world == 1) return;
  const float inverse = 1.0f / static_cast<float>(world);
  for (float& x : data) x *= inverse;
}

// An allreduce in flight: data becomes the mean once the sum is complete.
class MpiPendingAllreduce final : public PendingAllreduce {
 public:
  MpiPendingAllreduce(MPI_Request request, CommWatchdog& watchdog, int64_t number, int rank, std::span<float> data,
                      int world)
      : request_(request), watchdog_(watchdog), number_(number), rank_(rank), data_(data), world_(world) {}
  ~MpiPendingAllreduce() override {
    // MPI requires completion; an error here has no one left to report to.
    if (request_ != MPI_REQUEST_NULL) MPI_Wait(&request_, MPI_STATUS_IGNORE);
  }
  void wait() override {
    if (request_ == MPI_REQUEST_NULL) return;
    {
      Armed armed(watchdog_, number_, "allreduce");
      check_mpi(MPI_Wait(&request_, MPI_STATUS_IGNORE), "MPI_Wait(MPI_Iallreduce)", rank_);
    }
    completed();
  }
  bool test() override {
    if (request_ == MPI_REQUEST_NULL) return true;
    int done = 0;
    check_mpi(MPI_Test(&request_, &done, MPI_STATUS_IGNORE), "MPI_Test(MPI_Iallreduce)", rank_);
    if (done != 0) completed();  // MPI_Test sets request_ to MPI_REQUEST_NULL once done
    return done != 0;
  }

 private:
  // Runs once: after it request_ is MPI_REQUEST_NULL and both calls return at once.
  void completed() { scale_to_mean(data_, world_); }

  MPI_Request request_;
  CommWatchdog& watchdog_;
  int64_t number_;
  int rank_;
  std::span<float> data_;
  int world_;
};

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator() {
    const double timeout_s = comm_timeout_from_env();  // a bad value fails before MPI starts
    int initialized = 0;
    check_mpi(MPI_Initialized(&initialized), "MPI_Initialized", -1);
    int provided = MPI_THREAD_SINGLE;
    if (!initialized) {
      const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
      if (rc != MPI_SUCCESS) {
        throw DistributedError(fmt::format("MPI_Init_thread failed (error {}); is this an Open MPI job?", rc));
      }
      owns_mpi_ = true;
    } else {
      check_mpi(MPI_Query_thread(&provided), "MPI_Query_thread", -1);
    }
    check_mpi(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", -1);
    check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank", -1);
    check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size", rank_);
    if (provided < MPI_THREAD_MULTIPLE) {
      throw DistributedError(
          fmt::format("rank {}: this MPI provides thread level {}, ddpscope needs MPI_THREAD_MULTIPLE ({}) for its "
                      "communication watchdog",
                      rank_, provided, MPI_THREAD_MULTIPLE));
    }
    // Our own communicators: library traffic never matches the application's, and the
    // watchdog's queries never match a collective.
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup", rank_);
    check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", rank_);
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &diag_comm_), "MPI_Comm_dup", rank_);
    check_mpi(MPI_Comm_set_errhandler(diag_comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler", rank_);
    watchdog_ = std::make_unique<CommWatchdog>(diag_comm_, timeout_s);
  }

  ~MpiCommunicator() override {
    watchdog_.reset();
    MPI_Comm_free(&diag_comm_);
    MPI_Comm_free(&comm_);
    if (owns_mpi_) MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void allreduce_sum(std::span<float> data) override { allreduce(data, MPI_FLOAT); }
  void allreduce_sum(std::span<double> data) override { allreduce(data, MPI_DOUBLE); }

  void allreduce_mean(std::span<float> data) override {
    allreduce(data, MPI_FLOAT);
    scale_to_mean(data, size_);
  }
  std::unique_ptr<PendingAllreduce> allreduce_mean_async(std::span<float> data) override {
    return start_allreduce(data);
  }

  void reduce_scatter_mean(std::span<float> data, std::span<const int> counts) override {
    const std::vector<int> offsets = range_offsets(data, counts);
    Armed armed(*watchdog_, watchdog_->begin(), "reduce_scatter");
    // In place, MPI leaves this rank's reduced range at the start of the buffer.
    check_mpi(MPI_Reduce_scatter(MPI_IN_PLACE, data.data(), counts.data(), MPI_FLOAT, MPI_SUM, comm_),
              "MPI_Reduce_scatter", rank_);
    const std::span<float> mine = data.subspan(static_cast<std::size_t>(offsets[rank_]), counts[rank_]);
    std::copy_backward(data.begin(), data.begin() + counts[rank_], mine.end());
    scale_to_mean(mine, size_);
  }

  void allgather_ranges(std::span<float> data, std::span<const int> counts) override {
    const std::vector<int> offsets = range_offsets(data, counts);
    Armed armed(*watchdog_, watchdog_->begin(), "allgather");
    check_mpi(MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data.data(), counts.data(), offsets.data(), MPI_FLOAT,
                             comm_),
              "MPI_Allgatherv", rank_);
  }

  void broadcast(std::span<std::byte> data, int root) override {
    DDP_CHECK_GE(root, 0);
    DDP_CHECK_LT(root, size_);
    for (std::size_t begin = 0; begin < data.size(); begin += kMaxCount) {
      const std::size_t count = std::min(kMaxCount, data.size() - begin);
      Armed armed(*watchdog_, watchdog_->begin(), "broadcast");
      check_mpi(MPI_Bcast(data.data() + begin, static_cast<int>(count), MPI_BYTE, root, comm_), "MPI_Bcast", rank_);
    }
  }

  void barrier() override {
    Armed armed(*watchdog_, watchdog_->begin(), "barrier");
    check_mpi(MPI_Barrier(comm_), "MPI_Barrier", rank_);
  }

  std::vector<double> allgather(double value) override { return gather(value, MPI_DOUBLE); }
  std::vector<uint64_t> allgather(uint64_t value) override { return gather(value, MPI_UINT64_T); }

  std::string host_name() const override {
    std::array<char, 256> name{};
    if (gethostname(name.data(), name.size() - 1) != 0) return "localhost";
    return name.data();
  }

 private:
  template <typename T>
  void allreduce(std::span<T> data, MPI_Datatype type) {
    for (std::size_t begin = 0; begin < data.size(); begin += kMaxCount) {
      const std::size_t n = std::min(kMaxCount, data.size() - begin);
      Armed armed(*watchdog_, watchdog_->begin(), "allreduce");
      check_mpi(MPI_Allreduce(MPI_IN_PLACE, data.data() + begin, static_cast<int>(n), type, MPI_SUM, comm_),
                "MPI_Allreduce", rank_);
    }
  }

  std::unique_ptr<PendingAllreduce> start_allreduce(std::span<float> data) {
    DDP_CHECK_LE(data.size(), kMaxCount, "asynchronous allreduce of more than 2^30 floats");
    const int64_t number = watchdog_->begin();
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(
        MPI_Iallreduce(MPI_IN_PLACE, data.data(), static_cast<int>(data.size()), MPI_FLOAT, MPI_SUM, comm_, &request),
        "MPI_Iallreduce", rank_);
    return std::make_unique<MpiPendingAllreduce>(request, *watchdog_, number, rank_, data, size_);
  }

  // Where each rank's range starts, after checking that the ranges cover data exactly.
  std::vector<int> range_offsets(std::span<float> data, std::span<const int> counts) const {
    DDP_CHECK_EQ(counts.size(), static_cast<std::size_t>(size_), "one range per rank");
    DDP_CHECK_LE(data.size(), kMaxCount, "ranges of more than 2^30 floats");
    std::vector<int> offsets(counts.size());
    int64_t offset = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
      DDP_CHECK_GE(counts[r], 0);
      offsets[r] = static_cast<int>(offset);
      offset += counts[r];
    }
    DDP_CHECK_EQ(static_cast<std::size_t>(offset), data.size(), "the ranges do not cover the data");
    return offsets;
  }

  template <typename T>
  std::vector<T> gather(T value, MPI_Datatype type) {
    std::vector<T> out(static_cast<std::size_t>(size_));
    Armed armed(*watchdog_, watchdog_->begin(), "allgather");
    check_mpi(MPI_Allgather(&value, 1, type, out.data(), 1, type, comm_), "MPI_Allgather", rank_);
    return out;
  }

  bool owns_mpi_ = false;
  int rank_ = 0;
  int size_ = 1;
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Comm diag_comm_ = MPI_COMM_NULL;
  std::unique_ptr<CommWatchdog> watchdog_;
};

}  // namespace

bool launched_by_mpi() {
  return has_env("OMPI_COMM_WORLD_SIZE") || has_env("PMI_SIZE") || has_env("PMIX_RANK") ||
         (has_env("SLURM_PROCID") && has_env("SLURM_NTASKS"));
}

int launcher_world_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}) {
    if (const char* value = std::getenv(name)) return std::max(1, std::atoi(value));
  }
  return 1;
}

std::unique_ptr<Communicator> make_mpi_communicator() { return std::make_unique<MpiCommunicator>(); }

void abort_mpi_job(int exit_code) {
  std::fflush(stdout);
  std::fflush(stderr);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);
}

}  // namespace ddp
