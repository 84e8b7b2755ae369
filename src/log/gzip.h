#pragma once
// Text as one gzip member (what `gzip` and torch.profiler's .json.gz write), for files whose
// name asks for it.
#include <string>
#include <string_view>

namespace ddp {

std::string gzip(std::string_view text);

}  // namespace ddp
