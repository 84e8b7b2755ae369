#pragma once
// How far a prediction of the scaling model can be trusted. Near the configurations the doctor
// ran, the model is as good as its fit there: its largest error on the measured configurations
// nearest the asked one, at least kBandFloor (one corner it fits badly, such as a width the
// machine cannot hold, says little about another). Away from them it knows less: the band grows
// by kBandPerEFold for every e-fold the asked configuration lies from the nearest measured one,
// summed over per-device batch, hidden width, depth (layers + 1) and devices. Measured beyond
// the fit's error: fitted at batch 256 across 3 namespace hosts, batch 48 (1.67 e-folds away)
// 32 % under its run (0.16 per e-fold beyond the 5 % floor); across 2 hosts at 1 Gbit/s, batch
// 128 (0.69 e-folds) +19.3 % with a fit error of 6.6 % (0.18 per e-fold) and +17.5 % in a CI
// run. kBandPerEFold holds the largest of these, 0.18, with room to spare.
#include <string>
#include <vector>

#include "doctor/doctor_result.h"
#include "doctor/workload_counts.h"

namespace ddp {

inline constexpr double kBandFloor = 0.05;
inline constexpr double kBandPerEFold = 0.25;

// A configuration the doctor measured, and the model's error there (predicted / measured - 1).
struct MeasuredPoint {
  int devices = 1;
  int64_t batch_size = 0;
  int64_t hidden_size = 0;
  int64_t hidden_layers = 0;
  double error = 0;
};

struct PredictionBand {
  double relative = 0;               // half-width, as a share of the predicted wall time
  double fit_error = 0;              // the largest |error| at the measured configurations
  double distance = 0;               // e-folds from the nearest measured configuration
  std::vector<std::string> outside;  // what lies beyond the measured range, in words
};

// The doctor's prediction rows that were measured (a label and a measured wall time) and whose
// change the model sees (not an ablation the model does not see, such as loader workers).
std::vector<MeasuredPoint> measured_points(const std::vector<PredictionRow>& predictions);

// Needs at least one measured point (checked).
PredictionBand prediction_band(const std::vector<MeasuredPoint>& measured, const WorkloadConfig& config);

}  // namespace ddp
