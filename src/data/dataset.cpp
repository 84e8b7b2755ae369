#include "ddpscope/dataset.h"

#include "data/csv_dataset.h"
#include "data/random_dataset.h"
#include "data/teacher_dataset.h"
#include "ddpscope/error.h"

namespace ddp {

std::unique_ptr<Dataset> make_dataset(const DatasetSpec& spec) {
  if (spec.input_dim <= 0) {
    throw UsageError("--input-dim " + std::to_string(spec.input_dim) + " must be a positive integer");
  }
  if (spec.output_dim <= 0) {
    throw UsageError("--output-dim " + std::to_string(spec.output_dim) + " must be a positive integer");
  }
  const bool synthetic = spec.kind == "random" || spec.kind == "teacher";
  if (synthetic && spec.size <= 0) {
    throw UsageError("--dataset-size " + std::to_string(spec.size) + " must be a positive integer (--data " +
                     spec.kind + ")");
  }
  if (spec.kind == "random") {
    return std::make_unique<RandomDataset>(spec.size, spec.input_dim, spec.output_dim, spec.seed);
  }
  if (spec.kind == "teacher") {
    return std::make_unique<TeacherDataset>(spec.size, spec.input_dim, spec.output_dim, spec.seed);
  }
  if (spec.kind.starts_with("csv:")) {
    const std::string path = spec.kind.substr(4);
    if (path.empty()) throw UsageError("--data csv: needs a file path, as in csv:data/train.csv");
    return std::make_unique<CsvDataset>(path, spec.input_dim, spec.output_dim);
  }
  throw UsageError("--data '" + spec.kind + "' is not a dataset; accepted: random, teacher, csv:PATH");
}

}  // namespace ddp
