#include "analyze/trace_file.h"

#include "analyze/op_phase.h"

namespace ddp {

uint8_t TraceFile::traits(uint32_t name) const {
  if (name >= name_traits_.size()) name_traits_.resize(names.size(), 0);
  uint8_t& t = name_traits_[name];
  if (!(t & kKnown)) {
    t = kKnown;
    if (can_mark_step(names[name])) t |= kStepMarker;
    if (is_collective_library_name(names[name])) t |= kCollectiveLibrary;
    if (ddp::is_region(names[name])) t |= kRegion;
  }
  return t;
}

bool TraceFile::is_collective_kernel(const TraceEvent& e) const {
  return e.kind == EventKind::kGpuKernel && (e.bytes >= 0 || (traits(e.name) & kCollectiveLibrary));
}

bool TraceFile::is_region(const TraceEvent& e) const {
  return e.kind == EventKind::kHostOp && (traits(e.name) & kRegion);
}

void TraceFile::add(const TraceEvent& e) {
  const bool host_or_annotation = e.kind == EventKind::kHostOp || e.kind == EventKind::kGpuAnnotation;
  if (host_or_annotation && (traits(e.name) & kStepMarker)) step_markers.push_back(e);
  if (e.kind == EventKind::kGpuKernel) {
    ++gpu_kernels;
    if (is_collective_kernel(e)) ++collective_kernels;
  }
  events.push_back(e);
}

}  // namespace ddp
