// One layout of the flat parameter buffer, read by the Mlp, checkpoints and buckets.
#include "ddpscope/layer_layout.h"

#include <gtest/gtest.h>

#include "ddpscope/mlp.h"

namespace ddp {
namespace {

TEST(LayerLayout, TheSeedsModelIsFourPackedLayersOf134657Floats) {
  const MlpShape seed{.input_dim = 10, .hidden_size = 256, .hidden_layers = 3, .output_dim = 1};
  const std::vector<LinearLayout> layers = layer_layout(seed);
  ASSERT_EQ(layers.size(), 4u);
  std::size_t offset = 0;
  for (const LinearLayout& layer : layers) {
    EXPECT_EQ(layer.weight_offset, offset);  // weight (out, in), then bias (out), no gaps
    EXPECT_EQ(layer.bias_offset, offset + static_cast<std::size_t>(layer.in * layer.out));
    offset = layer.end();
  }
  EXPECT_EQ(layers[0].in, 10);
  EXPECT_EQ(layers[3].out, 1);
  EXPECT_EQ(parameter_count(seed), 134657u);
  EXPECT_EQ(parameter_count(layers), offset);
}

TEST(LayerLayout, IsTheMlpsOwnAndNeedsNoModel) {
  const MlpShape shape{.input_dim = 3, .hidden_size = 5, .hidden_layers = 2, .output_dim = 2};
  const Mlp mlp(shape);
  const std::vector<LinearLayout> layers = layer_layout(shape);
  ASSERT_EQ(mlp.layers().size(), layers.size());
  for (std::size_t l = 0; l < layers.size(); ++l) {
    EXPECT_EQ(mlp.layers()[l].weight_offset, layers[l].weight_offset);
    EXPECT_EQ(mlp.layers()[l].bias_offset, layers[l].bias_offset);
  }
  EXPECT_EQ(mlp.num_params(), parameter_count(shape));
  // A shape far too large to allocate still has a layout: the doctor counts such models.
  const MlpShape wide{.input_dim = 10, .hidden_size = 1 << 16, .hidden_layers = 4, .output_dim = 1};
  const std::size_t h = 65536;
  EXPECT_EQ(parameter_count(wide), 10 * h + h + 3 * (h * h + h) + h + 1);
}

TEST(Workspace, KnowsItsBatchAndIsApartFromTheParameters) {
  const MlpShape shape{.input_dim = 4, .hidden_size = 8, .hidden_layers = 1, .output_dim = 2};
  Mlp mlp(shape);
  mlp.init_like_pytorch(1);
  Workspace small(shape, 2);
  Workspace large(shape, 6);
  EXPECT_EQ(small.max_batch(), 2);
  EXPECT_EQ(Workspace().max_batch(), 0);
  // The same parameters give the same output in either workspace.
  const std::vector<float> x = {0.5f, -1, 2, 0.25f, 1, 1, -0.5f, 3};
  const float* a = mlp.forward(x.data(), 2, small);
  const float* b = mlp.forward(x.data(), 2, large);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(a[i], b[i]) << i;
}

}  // namespace
}  // namespace ddp
