#pragma once
// What the GPU engine needs to make a dataset's samples itself (no host-to-device
// copy inside a step), without CUDA's types: the random and teacher datasets are regenerated
// on the device from their Philox counters (the CPU's own functions, bit for bit), a CSV
// file's rows are uploaded once. Any other dataset has no GPU form.
#include <cstdint>
#include <optional>
#include <span>

#include "data/teacher_net.h"
#include "ddpscope/dataset.h"

namespace ddp {

enum class GpuDataKind { kRandom, kTeacher, kRows };

struct GpuDataSpec {
  GpuDataKind kind = GpuDataKind::kRandom;
  int64_t size = 0;                            // samples
  uint64_t key = 0;                            // random and teacher: the Philox key of the samples
  TeacherNet teacher{};                        // teacher: its weights, in the dataset's host memory
  std::span<const float> inputs{}, targets{};  // rows: (size, I) and (size, O), in the dataset's memory

  // The samples' counter hi for an epoch's data: random data is new every epoch (epoch << 32,
  // data/random_dataset.cpp), the teacher's is a fixed set; rows have no counter.
  uint64_t counter_hi(int64_t epoch) const;
};

// The dataset's GPU form; none for a dataset the GPU cannot make. Points into the dataset,
// which must outlive it.
std::optional<GpuDataSpec> gpu_data_spec(const Dataset& dataset);

}  // namespace ddp
