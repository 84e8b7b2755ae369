#include "gpu/gpu_data_spec.h"

#include "data/csv_dataset.h"
#include "data/random_dataset.h"
#include "data/teacher_dataset.h"

namespace ddp {

uint64_t GpuDataSpec::counter_hi(int64_t epoch) const {
  switch (kind) {
    case GpuDataKind::kRandom:
      return RandomDataset::counter_hi(epoch);
    case GpuDataKind::kTeacher:
      return TeacherDataset::kSamplesHi;
    case GpuDataKind::kRows:
      return 0;
  }
  return 0;
}

std::optional<GpuDataSpec> gpu_data_spec(const Dataset& dataset) {
  if (const auto* random = dynamic_cast<const RandomDataset*>(&dataset)) {
    return GpuDataSpec{.kind = GpuDataKind::kRandom, .size = random->size(), .key = random->key()};
  }
  if (const auto* teacher = dynamic_cast<const TeacherDataset*>(&dataset)) {
    return GpuDataSpec{
        .kind = GpuDataKind::kTeacher, .size = teacher->size(), .key = teacher->key(), .teacher = teacher->net()};
  }
  if (const auto* csv = dynamic_cast<const CsvDataset*>(&dataset)) {
    return GpuDataSpec{
        .kind = GpuDataKind::kRows, .size = csv->size(), .inputs = csv->inputs(), .targets = csv->targets()};
  }
  return std::nullopt;
}

}  // namespace ddp
