#include "ddpscope/workspace.h"

#include <algorithm>

#include "base/check.h"
#include "ddpscope/error.h"

namespace ddp {

Workspace::Workspace(const MlpShape& shape, int64_t max_batch) : max_batch_(max_batch) {
  DDP_CHECK_GT(max_batch, 0);
  const std::vector<int64_t> widths = shape.widths();
  const int64_t max_width = *std::max_element(widths.begin(), widths.end());
  activations_.reserve(widths.size() - 1);
  for (std::size_t l = 1; l < widths.size(); ++l) {
    activations_.emplace_back(static_cast<std::size_t>(max_batch * widths[l]));
  }
  grad_a_ = Buffer(static_cast<std::size_t>(max_batch * max_width));
  grad_b_ = Buffer(static_cast<std::size_t>(max_batch * max_width));
}

}  // namespace ddp
