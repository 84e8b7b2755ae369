#include "run_options.h"

#include <algorithm>

#include "train/config/options.h"
#include "train/config/parse_value.h"

namespace ddp {

void add_run_options(CLI::App& command, RunOptions& run, const std::vector<std::string>& skip) {
  // Given twice, the last one wins, as for every other option; an empty value is refused,
  // not taken for "none given".
  command.add_option("--preset", run.preset, "a named configuration: seed (the seed's Trainer)")
      ->group("presets")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->each([](const std::string& v) {
        if (v.empty()) reject_value("preset", v, "seed");
      });
  command.add_option("--config", run.config_file, "YAML file of options (names without dashes)")
      ->group("presets")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
      ->each([](const std::string& v) {
        if (v.empty()) reject_value("config", v, "the path of a YAML file");
      });
  command.add_flag("--verbose", run.verbose, "also show Open MPI's own messages of a multi-rank job")
      ->group("observability");
  for (const OptionSpec& spec : option_specs()) {
    if (std::find(skip.begin(), skip.end(), spec.name) != skip.end()) continue;
    CLI::Option* option = spec.is_flag ? command.add_flag("--" + spec.name)->description(spec.help)
                                       : command.add_option("--" + spec.name, spec.help)->type_size(1);
    option->group(spec.group);
    if (!spec.is_flag) option->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    run.names[option] = spec.name;
    if (!spec.negation.empty()) {
      CLI::Option* negation = command.add_flag("--" + spec.negation)->description("turn --" + spec.name + " off");
      negation->group(spec.group);
      run.names[negation] = spec.negation;
    }
  }
}

OptionTexts given_options(const CLI::App& command, const RunOptions& run) {
  OptionTexts out;
  std::map<const CLI::Option*, std::size_t> seen;
  for (CLI::Option* option : command.parse_order()) {
    const auto name = run.names.find(option);
    if (name == run.names.end()) continue;
    const std::size_t occurrence = seen[option]++;
    if (option->get_type_size() == 0) {
      out.emplace_back(name->second, "true");
    } else {
      const CLI::results_t& results = option->results();
      out.emplace_back(name->second, occurrence < results.size() ? results[occurrence] : results.back());
    }
  }
  return out;
}

}  // namespace ddp
