#pragma once
// Validation metrics over the whole validation set, which is split across ranks without
// padding: every rank's batch-weighted sums, merged by metric name on every rank. A rank
// whose share is empty (a set smaller than the world) logged nothing and adds nothing, so
// the ranks' lists may differ in length and in names.
#include <vector>

#include "dist/communicator.h"
#include "log/logger.h"
#include "train/loop/metric_sink.h"

namespace ddp {

// Collective. Each metric's mean over every rank's samples, the same on every rank, in
// order of first appearance (rank zero's first).
Metrics validation_means(Communicator& comm, const std::vector<MetricSink::Entry>& mine);

}  // namespace ddp
