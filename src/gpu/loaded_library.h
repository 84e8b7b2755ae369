#pragma once
// A shared library opened with dlopen for the process's life (cuBLASLt, NCCL), and its
// functions by name; each failure is a UsageError that says what to install.
#include <string>

namespace ddp {

class LoadedLibrary {
 public:
  // install: what the message asks for when name cannot be loaded ("install ... or add ...").
  LoadedLibrary(std::string name, const std::string& needed_for, const std::string& install);

  // not_it: why a missing function means the wrong library ("it is not the cuBLASLt of CUDA 13").
  void* symbol(const char* function_name, const std::string& not_it) const;

 private:
  std::string name_;
  void* handle_ = nullptr;  // never closed
};

}  // namespace ddp
