#include "doctor/size_speedup.h"

#include <fmt/format.h>

#include "doctor/ablation.h"

namespace ddp {
namespace {

const AblationResult* find_run(const std::vector<AblationResult>& ablations, const std::string& name, int devices) {
  for (const AblationResult& a : ablations) {
    if (a.name == name && a.run.devices == devices) return &a;
  }
  return nullptr;
}

}  // namespace

std::vector<SizeSpeedup> size_speedups(const std::vector<AblationResult>& ablations,
                                       const std::vector<RunRecord>& runs) {
  std::vector<SizeSpeedup> out;
  if (runs.size() < 2 || runs.front().devices != 1) return out;
  const RunRecord& one = runs.front();
  const RunRecord& many = runs.back();
  for (const AblationResult& a : ablations) {
    if (!changes_work(a.name) || a.run.devices != 1) continue;
    const AblationResult* at_n = find_run(ablations, a.name, many.devices);
    if (at_n == nullptr) continue;
    SizeSpeedup s;
    s.name = a.name;
    s.devices = many.devices;
    if (!a.run.ok || !at_n->run.ok || !one.ok || !many.ok) {
      s.error = !a.run.ok ? a.run.label + " failed" : !at_n->run.ok ? at_n->run.label + " failed" : "a baseline failed";
      out.push_back(std::move(s));
      continue;
    }
    s.one_device_wall_seconds = a.run.wall_seconds;
    s.wall_seconds = at_n->run.wall_seconds;
    s.speedup = s.one_device_wall_seconds / s.wall_seconds;
    s.baseline_speedup = one.wall_seconds / many.wall_seconds;
    s.samples_per_second = at_n->run.summary.samples_per_second();
    out.push_back(std::move(s));
  }
  return out;
}

nlohmann::ordered_json to_json(const SizeSpeedup& s) {
  if (!s.error.empty()) return {{"name", s.name}, {"devices", s.devices}, {"error", s.error}};
  return {{"name", s.name},
          {"devices", s.devices},
          {"one_device_wall_seconds", s.one_device_wall_seconds},
          {"wall_seconds", s.wall_seconds},
          {"speedup", s.speedup},
          {"baseline_speedup", s.baseline_speedup},
          {"samples_per_second", s.samples_per_second}};
}

std::string describe(const SizeSpeedup& s) {
  if (!s.error.empty()) return fmt::format("{}: {}", s.name, s.error);
  return fmt::format(
      "{}: {} devices {} 1 at {:.2f}x (the baseline: {:.2f}x); {:.2f} s on 1, {:.2f} s on {}, "
      "{:.0f} samples/s",
      s.name, s.devices, s.speedup > 1 ? "beat" : "lose to", s.speedup, s.baseline_speedup, s.one_device_wall_seconds,
      s.wall_seconds, s.devices, s.samples_per_second);
}

}  // namespace ddp
