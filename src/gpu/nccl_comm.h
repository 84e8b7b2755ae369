#pragma once
// The GPU ranks' NCCL communicator, started as llm.c starts it: rank 0 makes the
// unique id, MPI carries it to the others (new_nccl_id, then the Trainer's broadcast), and
// every rank joins on its current GPU. Its allreduce is enqueued on a stream, so a step's
// stream capture holds it. The host waits for such work only through synchronize(), which
// polls: an error NCCL sees (a peer's connection lost) or a stall ends the wait with exit 4
// instead of a hang, and the communicator is aborted so its kernels return. Without CUDA's
// types (a stream is its CUstream_st*), so that the Trainer builds alike in every build; a
// build without NCCL's header says so from nccl_unavailable().
#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

struct CUstream_st;  // cudaStream_t
struct ncclComm;     // ncclComm_t

namespace ddp {

inline constexpr std::size_t kNcclIdBytes = 128;  // NCCL_UNIQUE_ID_BYTES
using NcclId = std::array<std::byte, kNcclIdBytes>;

// Why this process cannot average over NCCL (the build, or the library and what to install);
// "" when it can. Loads the library.
std::string nccl_unavailable();

// "libnccl.so.2", what a run that averages over NCCL loads; "" in a build without NCCL.
const char* nccl_library_name();

// A new communicator's id, made on rank 0 (throws UsageError when NCCL is unavailable).
NcclId new_nccl_id();

class NcclComm {
 public:
  // On the calling thread's current GPU; returns once every rank of the world has joined.
  NcclComm(const NcclId& id, int world, int rank);
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;
  // Destroys the communicator, or aborts it while an exception unwinds: the other ranks may
  // have stopped, and a destroy would wait for them. Its owner's CUDA graphs must be gone.
  ~NcclComm();

  // In place: the mean over the ranks of count floats, ordered on stream.
  void allreduce_mean(float* data, std::size_t count, CUstream_st* stream);

  // ZeRO-1's two halves (Communicator's reduce_scatter_mean and allgather_ranges), ordered on
  // stream: rank r owns counts[r] floats of data, in rank order. NCCL's ring reduce-scatter
  // and all-gather take equal ranges, and OptimizerShard's differ by one, so each range is a
  // reduce to (a broadcast from) its owner, all of them grouped into one NCCL launch.
  void reduce_scatter_mean(float* data, std::span<const int> counts, CUstream_st* stream);
  void allgather_ranges(float* data, std::span<const int> counts, CUstream_st* stream);

  // Waits for stream's work. On NCCL's asynchronous error, or when the work has made no
  // progress for timeout_s (`progress`, a count that grows as the device finishes work, has
  // not moved: gpu/progress_watch.h; without it, the whole wait is timed), calls
  // release_graphs, aborts the communicator and throws DistributedError saying which.
  // release_graphs must destroy every CUDA graph that holds this communicator's work: from
  // NCCL 2.26 an abort waits until no graph holds it.
  void synchronize(CUstream_st* stream, double timeout_s, const std::function<void()>& release_graphs = {},
                   const std::function<int64_t()>& progress = {});

  // Aborts the communicator (once): its queued kernels return, so that a rank unwinding with
  // collectives queued for a peer that is gone frees its memory instead of waiting.
  void abort();

  std::string version() const;  // "2.28.7"

 private:
  [[noreturn]] void abort_with(const std::string& why, const std::function<void()>& release_graphs);

  ncclComm* comm_ = nullptr;
  bool aborted_ = false;
};

}  // namespace ddp
