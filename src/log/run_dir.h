#pragma once
// Lightning's run folder: <default-root-dir>/<name>/version_<n>, n the next free number.
#include <filesystem>
#include <string>

namespace ddp {

// Creates and returns a run folder that no other run is using: the folder itself is
// created exclusively, so concurrent runs each get their own. version: empty for the next
// free number, digits for version_<digits>, anything else used as the folder name. A
// named folder that exists is refused (UsageError) unless overwrite, which replaces it.
// Unwritable: UsageError. The process holds the folder until it exits: another process that
// names it meanwhile is refused (UsageError), with or without overwrite.
std::filesystem::path make_run_dir(const std::string& root, const std::string& name, const std::string& version,
                                   bool overwrite = false);

}  // namespace ddp
