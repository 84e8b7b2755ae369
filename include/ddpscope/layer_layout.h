#pragma once
// The MLP's shape and where each layer lives in the flat parameter (and gradient) buffer,
// in PyTorch's order: layers.0.weight, layers.0.bias, layers.1.weight, ... Plain functions
// of plain values, so that the network, the checkpoint names, the bucket plan and the
// doctor's workload counts all read one layout.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace ddp {

struct MlpShape {
  int64_t input_dim = 10;
  int64_t hidden_size = 256;
  int64_t hidden_layers = 3;  // Linear+ReLU blocks; 0 means one Linear(input, output)
  int64_t output_dim = 1;

  int64_t num_layers() const { return hidden_layers + 1; }
  // [input_dim, hidden_size x hidden_layers, output_dim]
  std::vector<int64_t> widths() const;
};

// Where layer l lives in the flat buffers. weight is (out,in) as in nn.Linear, bias (out).
struct LinearLayout {
  int64_t in = 0;
  int64_t out = 0;
  std::size_t weight_offset = 0;
  std::size_t bias_offset = 0;
  std::size_t end() const { return bias_offset + static_cast<std::size_t>(out); }
};

// One entry per Linear layer, first to last, packed without gaps.
std::vector<LinearLayout> layer_layout(const MlpShape& shape);

// Floats in the flat buffer: the end of the last layer's bias.
std::size_t parameter_count(const std::vector<LinearLayout>& layers);
std::size_t parameter_count(const MlpShape& shape);

}  // namespace ddp
