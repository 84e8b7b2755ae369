#pragma once
// The events of one trace file in start order, in memory bounded by a run rather than by the
// file: events gather into a run; a full run is sorted and written to an unnamed temporary
// file, and reading merges the runs. A file of fewer events than a run never touches the disk.
#include <cstddef>
#include <cstdio>
#include <functional>
#include <memory>
#include <vector>

#include "analyze/trace_event.h"

namespace ddp {

class EventStore {
 public:
  static constexpr std::size_t kRunEvents = std::size_t{1} << 18;  // 12 MiB of events

  explicit EventStore(std::size_t run_events = kRunEvents);

  void push_back(const TraceEvent& e);
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Each event in start order; events that start together, in the order they were added.
  // Throws DataError when the temporary file cannot be written or read back.
  void for_each(const std::function<void(const TraceEvent&)>& visit);
  std::vector<TraceEvent> sorted();  // all at once: tests and small files

 private:
  struct Run {
    std::size_t first = 0;  // in events, from the file's start
    std::size_t count = 0;
  };
  void spill();
  void sort_run();

  std::size_t run_events_;
  std::vector<TraceEvent> buffer_;  // the run being gathered
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_{nullptr, &std::fclose};
  std::vector<Run> runs_;  // written, in order
  std::size_t size_ = 0;
};

}  // namespace ddp
