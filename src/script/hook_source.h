#pragma once
// hook/sitecustomize.py, compiled into the library by cmake/embed_assets.cmake, so that ddpscope
// can write it wherever a run needs it.
#include <string_view>

namespace ddp {

std::string_view python_hook_source();

}  // namespace ddp
