#pragma once
// The options as JSON, one encoding for every file that holds them (summary.json's "config",
// a checkpoint's "config" metadata, doctor.json's "config"): an option's text as the option
// table prints it, a number or boolean where the text is one. Files written before numbers
// were numbers everywhere (checkpoints wrote every value as a string) read the same.
#include <string_view>

#include <nlohmann/json.hpp>

#include "ddpscope/config.h"
#include "train/config/run_config.h"

namespace ddp {

nlohmann::ordered_json config_json(const OptionTexts& options);
nlohmann::ordered_json config_json(const Config& config);  // its resolved options

// Such an object read back: each value's text as config_json typed it from.
OptionTexts options_from_json(const nlohmann::ordered_json& config);

// Options as a Config, each through the option table's own parser (so a limit_train_batches
// with a point is a fraction, without one a count). Throws DataError naming `where`'s field
// that is unknown or not accepted.
Config typed_config(const OptionTexts& options, std::string_view where);
Config config_from_json(const nlohmann::ordered_json& config, std::string_view where);

}  // namespace ddp
