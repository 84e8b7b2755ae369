#include "gpu/loaded_library.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <utility>

#include "ddpscope/error.h"

namespace ddp {

LoadedLibrary::LoadedLibrary(std::string name, const std::string& needed_for, const std::string& install)
    : name_(std::move(name)), handle_(dlopen(name_.c_str(), RTLD_NOW | RTLD_LOCAL)) {
  if (handle_ == nullptr) {
    throw UsageError(fmt::format("{}, but {} could not be loaded ({}); {}", needed_for, name_, dlerror(), install));
  }
}

void* LoadedLibrary::symbol(const char* function_name, const std::string& not_it) const {
  void* address = dlsym(handle_, function_name);
  if (address == nullptr) throw UsageError(fmt::format("{} has no {}: {}", name_, function_name, not_it));
  return address;
}

}  // namespace ddp
