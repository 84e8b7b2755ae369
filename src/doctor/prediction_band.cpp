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

std::vector<MeasuredPoint> measured_points(const nlohmann::json& doctor) {
  std::vector<MeasuredPoint> out;
  const auto rows = doctor.find("predictions");
  if (rows == doctor.end() || !rows->is_array()) return out;
  for (const nlohmann::json& row : *rows) {
    if (!row.is_object()) continue;
    const auto number = [&](const char* key) {
      const auto v = row.find(key);
      return v != row.end() && v->is_number() ? v->get<double>() : std::numeric_limits<double>::quiet_NaN();
    };
    const auto label = row.find("label");
    const auto modelled = row.find("modelled");
    if (modelled != row.end() && modelled->is_boolean() && !modelled->get<bool>()) continue;
    const double measured = number("measured_wall_seconds"), error = number("error");
    if (label == row.end() || !label->is_string() || !std::isfinite(measured) || !std::isfinite(error)) continue;
    const double devices = number("devices"), batch = number("batch_size"), width = number("hidden_size"),
                 layers = number("hidden_layers");
    if (!(devices >= 1 && batch >= 1 && width >= 1 && layers >= 0)) continue;
    out.push_back({static_cast<int>(devices), static_cast<int64_t>(batch), static_cast<int64_t>(width),
                   static_cast<int64_t>(layers), error});
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
