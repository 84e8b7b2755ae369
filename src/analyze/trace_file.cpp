#include "analyze/trace_file.h"

#include "analyze/op_phase.h"

namespace ddp {

const TraceFile::NameFacts& TraceFile::facts(uint32_t name) const {
  if (name >= name_facts_.size()) name_facts_.resize(names.size());
  NameFacts& f = name_facts_[name];
  if (!(f.traits & kKnown)) {
    const std::string& text = names[name];
    f.traits = kKnown;
    if (can_mark_step(text)) f.traits |= kStepMarker;
    if (is_collective_library_name(text)) f.traits |= kCollectiveLibrary;
    if (ddp::is_region(text)) f.traits |= kRegion;
    if (ddp::is_collective_annotation(text)) f.traits |= kCollectiveAnnotation;
    if (ddp::is_collective_launch(text)) f.traits |= kCollectiveLaunch;
    if (profiler_step_number(text)) f.traits |= kProfilerStep;
    f.part = ddp::part_of_op(text);
  }
  return f;
}

bool TraceFile::is_collective_kernel(const TraceEvent& e) const {
  return e.kind == EventKind::kGpuKernel && (e.bytes >= 0 || (traits(e.name) & kCollectiveLibrary));
}

bool TraceFile::is_region(const TraceEvent& e) const {
  return e.kind == EventKind::kHostOp && (traits(e.name) & kRegion);
}

std::optional<Phase> TraceFile::part_of_op(const TraceEvent& e) const { return facts(e.name).part; }

bool TraceFile::is_collective_annotation(const TraceEvent& e) const {
  return (traits(e.name) & kCollectiveAnnotation) != 0;
}

bool TraceFile::is_collective_launch(const TraceEvent& e) const { return (traits(e.name) & kCollectiveLaunch) != 0; }

bool TraceFile::is_profiler_step(const TraceEvent& e) const { return (traits(e.name) & kProfilerStep) != 0; }

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
