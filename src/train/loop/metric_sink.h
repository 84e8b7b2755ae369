#pragma once
// Collects what a module logs during steps: the latest value of each training metric, and
// the batch-size weighted sums of validation metrics (reduced across ranks later).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "log/logger.h"

namespace ddp {

class MetricSink {
 public:
  struct Entry {
    std::string name;
    double last = 0;          // training: the latest value
    double weighted_sum = 0;  // validation: sum of value * batch size
    double weight = 0;
  };

  void record(std::string_view name, double value, int64_t batch_size) {
    find(name).last = value;
    add_sums(name, value * static_cast<double>(batch_size), static_cast<double>(batch_size));
  }
  // Sums recorded elsewhere (another rank's), merged into this sink's.
  void add_sums(std::string_view name, double weighted_sum, double weight) {
    Entry& e = find(name);
    e.weighted_sum += weighted_sum;
    e.weight += weight;
  }
  void clear() { entries_.clear(); }
  std::vector<Entry>& entries() { return entries_; }

  Metrics latest() const {
    Metrics out;
    for (const Entry& e : entries_) out.emplace_back(e.name, e.last);
    return out;
  }

 private:
  Entry& find(std::string_view name) {
    for (Entry& e : entries_) {
      if (e.name == name) return e;
    }
    entries_.push_back({std::string(name)});
    return entries_.back();
  }
  std::vector<Entry> entries_;
};

}  // namespace ddp
