#pragma once
// doctor.json's "runs" read back as the doctor's own records (run_record.h), so that a command
// reading a doctor's study (predict) works on typed runs and JSON stops at the file. Lenient,
// as the report is with any file a user points it at: a field a file lacks stays at
// RunRecord's default (a wall of 0 is unmeasured), a run without an integer "devices" >= 1 is
// left out, and a summary this version cannot read is left empty (it measured nothing usable).
#include <vector>

#include <nlohmann/json.hpp>

#include "doctor/run_record.h"

namespace ddp {

std::vector<RunRecord> runs_of_doctor_json(const nlohmann::json& doctor);

}  // namespace ddp
