#include "doctor/prediction_band.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/check.h"

namespace ddp {
namespace {

double efolds(double a, double b) { return a > 0 && b > 0 ? std::fabs(std::log(a / b)) : 0.0; }

// "per-device batch 48, below the measured 256..256" and what it changes, or nothing inside.
template <typename Get>
void say_if_outside(const std::vector<MeasuredPoint>& measured, double value, Get get, const char* what,
                    const char* consequence, std::vector<std::string>& out) {
  double lo = std::numeric_limits<double>::max(), hi = 0;
  for (const MeasuredPoint& m : measured) {
    lo = std::min(lo, get(m));
    hi = std::max(hi, get(m));
  }
  if (value >= lo && value <= hi) return;
  const double nearest = value < lo ? lo : hi;
  const std::string range = lo == hi ? fmt::format("{:g}", lo) : fmt::format("{:g} to {:g}", lo, hi);
  out.push_back(fmt::format(
      "{} {:g}, {} the measured {}{}", what, value, value < lo ? "below" : "above", range,
      *consequence ? fmt::format(": {}", fmt::format(fmt::runtime(consequence), nearest / value)) : std::string()));
}

}  // namespace

std::vector<MeasuredPoint> measured_points(const std::vector<PredictionRow>& predictions) {
  std::vector<MeasuredPoint> out;
  for (const PredictionRow& p : predictions) {
    if (!p.measured_wall_seconds || !p.modelled || !p.label) continue;
    const WorkloadConfig& w = p.workload;
    out.push_back({w.devices, w.batch_size, w.hidden_size, w.hidden_layers, *p.error()});
  }
  return out;
}

PredictionBand prediction_band(const std::vector<MeasuredPoint>& measured, const WorkloadConfig& c) {
  DDP_CHECK(!measured.empty(), "a band needs a measured configuration");
  PredictionBand band;
  const auto distance = [&](const MeasuredPoint& m) {
    return efolds(static_cast<double>(c.batch_size), static_cast<double>(m.batch_size)) +
           efolds(static_cast<double>(c.hidden_size), static_cast<double>(m.hidden_size)) +
           efolds(static_cast<double>(c.hidden_layers + 1), static_cast<double>(m.hidden_layers + 1)) +
           efolds(c.devices, m.devices);
  };
  band.distance = std::numeric_limits<double>::max();
  for (const MeasuredPoint& m : measured) band.distance = std::min(band.distance, distance(m));
  for (const MeasuredPoint& m : measured) {
    if (distance(m) <= band.distance + 1e-9) band.fit_error = std::max(band.fit_error, std::fabs(m.error));
  }
  band.relative = std::max(band.fit_error, kBandFloor) + kBandPerEFold * band.distance;
  say_if_outside(
      measured, static_cast<double>(c.batch_size), [](const MeasuredPoint& m) { return double(m.batch_size); },
      "per-device batch", "{:.1f}x the gradient synchronisations per sample of the nearest measured", band.outside);
  say_if_outside(
      measured, static_cast<double>(c.hidden_size), [](const MeasuredPoint& m) { return double(m.hidden_size); },
      "hidden width", "", band.outside);
  say_if_outside(
      measured, static_cast<double>(c.hidden_layers), [](const MeasuredPoint& m) { return double(m.hidden_layers); },
      "hidden layers", "", band.outside);
  say_if_outside(
      measured, static_cast<double>(c.devices), [](const MeasuredPoint& m) { return double(m.devices); }, "devices", "",
      band.outside);
  return band;
}

}  // namespace ddp
