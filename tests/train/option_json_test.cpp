// The one JSON encoding of options (summary.json, checkpoints, doctor.json): numbers and
// booleans as such, read back as the text the option table prints; files that held every value
// as a string (checkpoints before it) read alike.
#include "train/config/option_json.h"

#include <gtest/gtest.h>

#include "ddpscope/error.h"
#include "train/config/options.h"

namespace ddp {
namespace {

TEST(OptionJson, NumbersAndBooleansAreJsonsOwnAndReadBackAsTheirText) {
  Config config;
  apply_option(config, "batch-size", "64");
  apply_option(config, "lr", "0.001");
  apply_option(config, "limit-train-batches", "1.0");
  const nlohmann::ordered_json j = config_json(config);
  EXPECT_EQ(j["batch_size"], 64);
  EXPECT_EQ(j["lr"], 0.001);
  EXPECT_EQ(j["shuffle"], true);
  EXPECT_EQ(j["limit_train_batches"], 1.0);  // a fraction keeps its point
  EXPECT_EQ(options_from_json(j), resolved_options(config));
  EXPECT_EQ(resolved_options(config_from_json(j, "x")), resolved_options(config));
}

TEST(OptionJson, AnOlderFileOfStringsReadsAsItsNumbers) {
  const nlohmann::ordered_json strings = {{"batch_size", "16"}, {"seed", "0"}, {"shuffle", "true"}};
  const nlohmann::ordered_json numbers = {{"batch_size", 16}, {"seed", 0}, {"shuffle", true}};
  EXPECT_EQ(options_from_json(strings), options_from_json(numbers));
}

TEST(OptionJson, AValueNotAcceptedIsNamedWithItsFile) {
  try {
    config_from_json({{"batch_size", "big"}}, "run.json config");
    FAIL();
  } catch (const DataError& e) {
    EXPECT_EQ(std::string(e.what()).substr(0, 59), "run.json config field \"batch_size\": --batch-size: 'big' is ");
  }
  EXPECT_THROW(config_from_json(nlohmann::ordered_json::array(), "run.json config"), DataError);
}

}  // namespace
}  // namespace ddp
