#pragma once
// A user's value quoted back in a message: long values are cut, so that a 5 MB cell or
// option does not flood the terminal, and control bytes are escaped, so that a NUL does not
// end the message where it is printed.
#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace ddp {

inline constexpr std::size_t kExcerptChars = 60;

// text with each byte below 0x20 (NUL, ESC, newline ...) and 0x7f written as \xNN.
inline std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte >= 0x20 && byte != 0x7f) {
      out += c;
      continue;
    }
    char escaped[5];
    std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
    out += escaped;
  }
  return out;
}

// text itself when short; else its first kExcerptChars characters, "...", and its length.
inline std::string excerpt(std::string_view text) {
  if (text.size() <= kExcerptChars) return printable(text);
  return printable(text.substr(0, kExcerptChars)) + "... (" + std::to_string(text.size()) + " characters)";
}

}  // namespace ddp
