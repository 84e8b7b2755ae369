#pragma once
// Lightning's run folder: <default-root-dir>/<name>/version_<n>, n the next free number.
#include <filesystem>
#include <string>

namespace ddp {

// Creates and returns the run folder. version: empty for the next free number, digits for
// version_<digits>, anything else used as the folder name. Unwritable: UsageError.
std::filesystem::path make_run_dir(const std::string& root, const std::string& name, const std::string& version);

}  // namespace ddp
