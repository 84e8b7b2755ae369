#pragma once
// Strict reading of a JSON file's fields: every error is a DataError that names the field and
// where it is (`where`: the file and the path to the object, "doctor.json runs[2]"), and what was
// expected. For the files ddpscope writes and reads back (summary.json, doctor.json).
#include <fmt/format.h>

#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "ddpscope/error.h"

namespace ddp::json_fields {

using Json = nlohmann::ordered_json;

inline const Json& member(const Json& j, const std::string& key, const std::string& where) {
  if (!j.is_object()) throw DataError(fmt::format("{} is not a JSON object", where));
  const auto it = j.find(key);
  if (it == j.end()) throw DataError(fmt::format("{} has no \"{}\"", where, key));
  return *it;
}

// A string, a bool, or a number (an integer where T is).
template <typename T>
T read(const Json& j, const std::string& key, const std::string& where) {
  const Json& value = member(j, key, where);
  const bool ok = std::is_same_v<T, std::string> ? value.is_string()
                  : std::is_same_v<T, bool>      ? value.is_boolean()
                  : std::is_floating_point_v<T>  ? value.is_number()
                                                 : value.is_number_integer();
  if (!ok) {
    throw DataError(fmt::format("{} field \"{}\" is {}, expected {}", where, key, value.dump(),
                                std::is_same_v<T, std::string> ? "a string"
                                : std::is_same_v<T, bool>      ? "true or false"
                                : std::is_floating_point_v<T>  ? "a number"
                                                               : "an integer"));
  }
  return value.get<T>();
}

// null, or what read<T> reads.
template <typename T>
std::optional<T> read_optional(const Json& j, const std::string& key, const std::string& where) {
  if (member(j, key, where).is_null()) return std::nullopt;
  return read<T>(j, key, where);
}

inline const Json& read_array(const Json& j, const std::string& key, const std::string& where) {
  const Json& value = member(j, key, where);
  if (!value.is_array()) throw DataError(fmt::format("{} field \"{}\" is not a list", where, key));
  return value;
}

inline std::vector<std::string> read_strings(const Json& j, const std::string& key, const std::string& where) {
  std::vector<std::string> out;
  for (const Json& item : read_array(j, key, where)) {
    if (!item.is_string()) {
      throw DataError(fmt::format("{} field \"{}\" holds {}, expected strings", where, key, item.dump()));
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

}  // namespace ddp::json_fields
