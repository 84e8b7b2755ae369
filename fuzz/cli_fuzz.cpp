// The option layer under the command line: the input is NUL-separated words taken as
// (name, value) pairs, resolved and validated as the CLI does before it would train
// (run_cli itself would start training on valid input). A pair named "preset" picks the
// preset. Only a ddp::Error may come out.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ddpscope/error.h"
#include "train/config/options.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<std::string> words;
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  while (!rest.empty()) {
    const size_t end = std::min(rest.find('\0'), rest.size());
    words.emplace_back(rest.substr(0, end));
    rest.remove_prefix(std::min(end + 1, rest.size()));
  }
  if (words.size() % 2 == 1) words.emplace_back("true");  // a trailing switch
  std::vector<std::pair<std::string, std::string>> options;
  std::string preset;
  for (size_t i = 0; i < words.size(); i += 2) {
    if (words[i] == "preset") {
      preset = words[i + 1];
    } else {
      options.emplace_back(words[i], words[i + 1]);
    }
  }
  try {
    const ddp::Config config = ddp::resolve_config(options, preset, "");
    ddp::validate_config(config);
    (void)ddp::resolved_options(config);
  } catch (const ddp::Error&) {
  }
  return 0;
}
