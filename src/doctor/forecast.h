#pragma once
// predict's answer: the fitted scaling model of a doctor.json (doctor/scaling_model.h) priced at
// another configuration, checked against the doctor's own runs, with its band, its break-evens
// and the device counts asked for. apps/predict_command.cpp reads the options and prints it.
#include <optional>
#include <string>
#include <vector>

#include "ddpscope/config.h"
#include "doctor/doctor_result.h"
#include "doctor/prediction_band.h"
#include "doctor/scaling_model.h"

namespace ddp {

// What the user asks: a configuration, and which of its options they set (as the option table's
// keys): those, and the ones its preset sets, replace the doctor's configuration.
struct ForecastRequest {
  std::string from;  // the doctor.json, as errors name it
  Config asked;      // resolved and validated as train does
  std::vector<std::string> given;
  std::string interconnect = "measured";  // or a preset's name (doctor/interconnect.h)
  std::vector<int> devices_list;          // also these device counts
};

// One row of --devices-list: the prediction and, with more than one device, its break-evens.
struct DevicesRow {
  Prediction prediction;
  std::optional<int64_t> batch, width;
};

// What predict computes, for the text and the JSON printers alike.
struct Forecast {
  std::string from;
  WorkloadConfig config;
  std::vector<std::string> not_modelled;  // given options the model does not depend on, as typed
  Prediction prediction;
  std::vector<SweepPoint> batches, widths;  // with more than one device
  std::vector<DevicesRow> devices_list;
  std::optional<PredictionBand> band;  // none when doctor.json has no measured prediction rows
  double busy_share = 0;               // of the cores, the most other processes took during a doctor's run
  double shared_cores_share = 0;       // of a machine's ranks, the most that had no core of their own
};

// DataError naming `from`: a result read from traces or without a model, a model that predicts no
// finite time or one far from the doctor's own runs, or more devices than a model without a
// multi-device run can price.
Forecast forecast(const DoctorResult& doctor, const ForecastRequest& request);

}  // namespace ddp
