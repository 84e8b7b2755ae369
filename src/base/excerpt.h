#pragma once
// A user's value quoted back in a message: long values are cut, so that a 5 MB cell or
// option does not flood the terminal.
#include <cstddef>
#include <string>
#include <string_view>

namespace ddp {

inline constexpr std::size_t kExcerptChars = 60;

// text itself when short; else its first kExcerptChars characters, "...", and its length.
inline std::string excerpt(std::string_view text) {
  if (text.size() <= kExcerptChars) return std::string(text);
  return std::string(text.substr(0, kExcerptChars)) + "... (" + std::to_string(text.size()) + " characters)";
}

}  // namespace ddp
