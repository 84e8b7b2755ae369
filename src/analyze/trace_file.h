#pragma once
// What the trace reader keeps of one trace file: its events, in start order, and what is
// known of the job and the file before they are read in order.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analyze/event_store.h"
#include "analyze/trace_event.h"
#include "ddpscope/error.h"
#include "observe/phase.h"

namespace ddp {

// A file that is readable but no training trace (a summary.json, no step in it): where it was
// found in a folder, it is skipped and said rather than refused.
struct NotATraceError : DataError {
  using DataError::DataError;
};

// The job a file says it belongs to, where it says (Kineto's distributedInfo).
struct DistributedInfo {
  std::optional<int> rank;
  std::optional<int> world_size;
  std::string backend;  // "nccl", "gloo", ... or empty
};

// One rank's trace as read. `pid` keeps ddpscope's own trace.json apart: it holds every rank,
// one per process id.
struct TraceFile {
  std::string path;
  // kDdpscope: `train --profiler trace`'s trace.json; kAnalyzeOutput: `analyze --trace`'s merged
  // trace, which is no job's own trace.
  enum class Dialect { kKineto, kLegacyArray, kDdpscope, kAnalyzeOutput } dialect = Dialect::kKineto;
  DistributedInfo distributed;
  std::string host_name;               // Kineto's "host_name", where it says
  std::optional<double> base_time_ns;  // Kineto's "baseTimeNanoseconds": events' ts count from it
  NameTable names;
  NameTable threads;                    // "pid/tid" of a host thread or GPU stream
  std::vector<int64_t> thread_pid{-1};  // per thread (index 0: the empty name): its process id, or -1

  // Every event kept, in start order when read (add() puts them there).
  EventStore events;
  // What the step finder needs before it reads the events in order: the few events whose names
  // can mark a step (profiler steps, Lightning's batches, optimizer steps), and what the GPU ran.
  std::vector<TraceEvent> step_markers;
  int64_t gpu_kernels = 0;
  int64_t collective_kernels = 0;  // by their metadata or NCCL's or RCCL's name

  void add(const TraceEvent& e);
  // A GPU kernel of a collective: by its metadata (Kineto's "In msg nelems" gives bytes), else by
  // the library in its name (older traces carry no metadata).
  bool is_collective_kernel(const TraceEvent& e) const;
  // What op_phase.h says of an event's name, found once per name: these run for every event.
  bool is_region(const TraceEvent& e) const;  // a host event that marks a region of the training code
  std::optional<Phase> part_of_op(const TraceEvent& e) const;
  bool is_collective_annotation(const TraceEvent& e) const;
  bool is_collective_launch(const TraceEvent& e) const;
  bool is_profiler_step(const TraceEvent& e) const;

 private:
  enum NameTrait : uint8_t {
    kKnown = 1,
    kStepMarker = 2,
    kCollectiveLibrary = 4,
    kRegion = 8,
    kCollectiveAnnotation = 16,
    kCollectiveLaunch = 32,
    kProfilerStep = 64,
  };
  struct NameFacts {
    uint8_t traits = 0;
    std::optional<Phase> part;
  };
  const NameFacts& facts(uint32_t name) const;
  uint8_t traits(uint32_t name) const { return facts(name).traits; }
  mutable std::vector<NameFacts> name_facts_;  // per name, found on first use
};

}  // namespace ddp
