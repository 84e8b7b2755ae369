#include "gpu/mlp_gpu.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "base/check.h"
#include "ddpscope/error.h"
#include "gpu/cuda_check.h"
#include "gpu/device_array.h"
#include "gpu/relu_bias_grad_gpu.h"
#include "gpu/relu_gpu.h"

namespace ddp {

GpuActivationMemory::GpuActivationMemory(const MlpShape& shape, int64_t max_batch) {
  int64_t widest = 0;
  for (const int64_t width : shape.widths()) widest = std::max(widest, width);
  const auto add = [&](int64_t width) {
    arrays_.push_back(std::make_unique<DeviceArray<float>>(static_cast<std::size_t>(max_batch * width)));
    return arrays_.back()->data();
  };
  for (const LinearLayout& layer : layer_layout(shape)) view_.outputs.push_back(add(layer.out));
  view_.gradient = add(widest);
  view_.scratch = add(widest);
}

const float* mlp_forward_gpu(LtGemm& lt, const std::vector<LinearLayout>& layers, const float* params, const float* x,
                             int64_t b, const GpuActivations& act, cudaStream_t stream) {
  DDP_CHECK_EQ(act.outputs.size(), layers.size());
  const float* input = x;
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const LinearLayout& layer = layers[l];
    const bool hidden = l + 1 < layers.size();
    // y (b,out) = input (b,in) * W^T, W is (out,in); + bias, then ReLU on the hidden layers
    lt.gemm(Trans::kNo, Trans::kYes, b, layer.out, layer.in, input, layer.in, params + layer.weight_offset, layer.in,
            0.0f, act.outputs[l], layer.out, params + layer.bias_offset, stream);
    if (hidden) launch_relu(act.outputs[l], b * layer.out, stream);
    input = act.outputs[l];
  }
  return input;
}

void mlp_backward_gpu(LtGemm& lt, const std::vector<LinearLayout>& layers, const float* params, float* grads,
                      const float* x, int64_t b, const GpuActivations& act, cudaStream_t stream,
                      const std::function<void(int64_t layer)>& on_layer_done) {
  DDP_CHECK_EQ(act.outputs.size(), layers.size());
  float* dy = act.gradient;
  float* dx = act.scratch;
  const auto num_layers = static_cast<int64_t>(layers.size());
  for (int64_t l = num_layers - 1; l >= 0; --l) {
    const LinearLayout& layer = layers[static_cast<std::size_t>(l)];
    const float* input = l == 0 ? x : act.outputs[static_cast<std::size_t>(l - 1)];
    const float* relu_output = l != num_layers - 1 ? act.outputs[static_cast<std::size_t>(l)] : nullptr;
    launch_relu_backward_and_bias_grad(dy, relu_output, grads + layer.bias_offset, b, layer.out, stream);
    // dW (out,in) += dy^T (out,b) * input (b,in)
    lt.gemm(Trans::kYes, Trans::kNo, layer.out, layer.in, b, dy, layer.out, input, layer.in, 1.0f,
            grads + layer.weight_offset, layer.in, nullptr, stream);
    // Reported before dx, so that the layer's bucket can be reduced while the rest runs.
    if (on_layer_done) on_layer_done(l);
    if (l == 0) break;  // nobody needs dLoss/dX
    // dx (b,in) = dy (b,out) * W (out,in)
    lt.gemm(Trans::kNo, Trans::kNo, b, layer.in, layer.out, dy, layer.out, params + layer.weight_offset, layer.in, 0.0f,
            dx, layer.in, nullptr, stream);
    std::swap(dy, dx);
  }
}

MlpPassOnGpu mlp_pass_on_gpu(const MlpShape& shape, LtMath math, const std::vector<float>& params,
                             const std::vector<float>& x, int64_t b, const std::vector<float>& output_gradient,
                             const std::vector<float>& grads) {
  const std::vector<LinearLayout> layers = layer_layout(shape);
  DDP_CHECK_EQ(params.size(), parameter_count(layers));
  DDP_CHECK_EQ(grads.size(), params.size());
  DDP_CHECK_EQ(x.size(), static_cast<std::size_t>(b * shape.input_dim));
  DDP_CHECK_EQ(output_gradient.size(), static_cast<std::size_t>(b * shape.output_dim));
  LtGemm lt(math);
  const DeviceArray<float> d_params(params), d_grads(grads), d_x(x);
  const GpuActivationMemory memory(shape, b);
  const GpuActivations& act = memory.view();

  MlpPassOnGpu out;
  out.output.resize(static_cast<std::size_t>(b * shape.output_dim));
  const float* y = mlp_forward_gpu(lt, layers, d_params.data(), d_x.data(), b, act, nullptr);
  check_cuda(cudaMemcpy(out.output.data(), y, out.output.size() * sizeof(float), cudaMemcpyDeviceToHost),
             "cudaMemcpy of the output");
  check_cuda(
      cudaMemcpy(act.gradient, output_gradient.data(), output_gradient.size() * sizeof(float), cudaMemcpyHostToDevice),
      "cudaMemcpy of the output gradient");
  mlp_backward_gpu(lt, layers, d_params.data(), d_grads.data(), d_x.data(), b, act, nullptr);
  out.grads = d_grads.to_host();
  return out;
}

}  // namespace ddp
