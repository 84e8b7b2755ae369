#include "ddpscope/layer_layout.h"

namespace ddp {

std::vector<int64_t> MlpShape::widths() const {
  std::vector<int64_t> w;
  w.reserve(static_cast<std::size_t>(hidden_layers + 2));
  w.push_back(input_dim);
  for (int64_t l = 0; l < hidden_layers; ++l) w.push_back(hidden_size);
  w.push_back(output_dim);
  return w;
}

std::vector<LinearLayout> layer_layout(const MlpShape& shape) {
  const std::vector<int64_t> widths = shape.widths();
  std::vector<LinearLayout> layers;
  std::size_t offset = 0;
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    LinearLayout layer;
    layer.in = widths[l];
    layer.out = widths[l + 1];
    layer.weight_offset = offset;
    offset += static_cast<std::size_t>(layer.in * layer.out);
    layer.bias_offset = offset;
    offset += static_cast<std::size_t>(layer.out);
    layers.push_back(layer);
  }
  return layers;
}

std::size_t parameter_count(const std::vector<LinearLayout>& layers) {
  return layers.empty() ? 0 : layers.back().end();
}

std::size_t parameter_count(const MlpShape& shape) { return parameter_count(layer_layout(shape)); }

}  // namespace ddp
