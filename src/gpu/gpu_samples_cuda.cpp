#include "gpu/gpu_samples.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "base/check.h"
#include "data/teacher_dataset.h"
#include "ddpscope/error.h"
#include "gpu/dataset_rows_gpu.h"
#include "gpu/normal_rows_gpu.h"

namespace ddp {
namespace {

// The teacher's five arrays end to end (empty for another dataset): one upload.
std::vector<float> packed_teacher(const GpuDataSpec& spec) {
  if (spec.kind != GpuDataKind::kTeacher) return {};
  const TeacherNet& net = spec.teacher;
  std::vector<float> packed;
  for (const auto& [values, count] :
       {std::pair{net.w1t, net.input_dim * TeacherNet::kHidden}, std::pair{net.b1, TeacherNet::kHidden},
        std::pair{net.w2, net.output_dim * TeacherNet::kHidden}, std::pair{net.b2, net.output_dim},
        std::pair{net.scale, net.output_dim}}) {
    packed.insert(packed.end(), values, values + count);
  }
  return packed;
}

std::size_t rows_floats(const GpuDataSpec& spec, std::span<const float> values) {
  return spec.kind == GpuDataKind::kRows ? values.size() : 0;
}

}  // namespace

GpuSamples::GpuSamples(const GpuDataSpec& spec, int64_t input_dim, int64_t output_dim)
    : spec_(spec),
      input_dim_(input_dim),
      output_dim_(output_dim),
      weights_(packed_teacher(spec)),
      inputs_(rows_floats(spec, spec.inputs)),
      targets_(rows_floats(spec, spec.targets)) {
  if (spec.kind == GpuDataKind::kTeacher) {
    const TeacherNet& net = spec.teacher;
    DDP_CHECK(net.input_dim == input_dim && net.output_dim == output_dim, "a teacher of another shape");
    // device_net_ points at each array in weights_, in packed_teacher's order.
    const float* next = weights_.data();
    const auto take = [&](int64_t count) { return std::exchange(next, next + count); };
    device_net_ = net;
    device_net_.w1t = take(input_dim * TeacherNet::kHidden);
    device_net_.b1 = take(TeacherNet::kHidden);
    device_net_.w2 = take(output_dim * TeacherNet::kHidden);
    device_net_.b2 = take(output_dim);
    device_net_.scale = take(output_dim);
  }
  if (spec.kind == GpuDataKind::kRows) {
    DDP_CHECK_EQ(spec.inputs.size(), static_cast<std::size_t>(spec.size * input_dim), "rows of another shape");
    DDP_CHECK_EQ(spec.targets.size(), static_cast<std::size_t>(spec.size * output_dim), "rows of another shape");
    inputs_.copy_from(spec.inputs.data(), spec.inputs.size());
    targets_.copy_from(spec.targets.data(), spec.targets.size());
  }
}

void GpuSamples::enqueue(const StepCursor* cursor, const int64_t* order, int64_t ahead, int64_t batch_size, int64_t n,
                         float* x, float* y, cudaStream_t stream) const {
  switch (spec_.kind) {
    case GpuDataKind::kRandom:
      launch_normal_rows_at(spec_.key, cursor, order, ahead, batch_size, n, x, input_dim_, y, output_dim_, stream);
      return;
    case GpuDataKind::kTeacher:
      launch_teacher_rows_at(device_net_, spec_.key, TeacherDataset::kNoise, cursor, order, ahead, batch_size, n, x, y,
                             stream);
      return;
    case GpuDataKind::kRows:
      launch_gather_rows_at(inputs_.data(), targets_.data(), input_dim_, output_dim_, cursor, order, ahead, batch_size,
                            n, x, y, stream);
      return;
  }
}

void GpuSamples::fill_on_host(int64_t epoch, std::span<const int64_t> indices, float* x, float* y) const {
  for (const int64_t index : indices) DDP_CHECK(index >= 0 && index < spec_.size, "sample index out of range");
  const auto n = static_cast<int64_t>(indices.size());
  const DeviceArray<int64_t> order(std::vector<int64_t>(indices.begin(), indices.end()));
  const DeviceArray<StepCursor> cursor(std::vector<StepCursor>{{counter_hi(epoch), 0, 0}});
  const DeviceArray<float> d_x(static_cast<std::size_t>(n * input_dim_)),
      d_y(static_cast<std::size_t>(n * output_dim_));
  enqueue(cursor.data(), order.data(), 0, n, n, d_x.data(), d_y.data(), nullptr);
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  const std::vector<float> host_x = d_x.to_host(), host_y = d_y.to_host();
  std::copy(host_x.begin(), host_x.end(), x);
  std::copy(host_y.begin(), host_y.end(), y);
}

}  // namespace ddp
