// The YAML config reader on arbitrary bytes, then resolution and validation as `--config
// FILE` does. Only a ddp::Error (a usage error naming the key) may come out.
#include <cstdint>

#include "ddpscope/error.h"
#include "fuzz_input_file.h"
#include "train/config/options.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = ddp::fuzz::write_input("yaml_config_fuzz", data, size);
  try {
    const ddp::Config config = ddp::resolve_config({}, "", path);
    ddp::validate_config(config);
    (void)ddp::resolved_options(config);  // what hparams.yaml prints
  } catch (const ddp::Error&) {
  }
  return 0;
}
