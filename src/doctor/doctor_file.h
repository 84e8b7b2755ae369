#pragma once
// doctor.json (or compare.json, or analyze --json's) read back: the one reader of the documents
// doctor_json.cpp writes, into the DoctorResult they were written from, runs of the engine or
// read from traces. Strict: a field that is missing or of another
// type is a DataError naming the file, the field and where it is ("doctor.json runs[1] summary
// field "epochs" is ..."). What the writer derives (speedups, each run's noise, utilization
// series, size speedups) is derived again from what is read, not read.
#include <string>

#include <nlohmann/json.hpp>

#include "doctor/doctor_result.h"

namespace ddp {

// `file` names the document in errors.
DoctorResult read_doctor_result(const nlohmann::ordered_json& doc, const std::string& file);

// The file at `path`: DataError where it cannot be read or is not JSON.
DoctorResult read_doctor_file(const std::string& path);

}  // namespace ddp
