#pragma once
// DDP_CHECK: an invariant of our own code. A failure is our bug, not the user's: it prints
// file:line and what failed, and aborts (a user's mistake is an Error, ddpscope/error.h).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <type_traits>

namespace ddp {

[[noreturn]] inline void check_failed(const char* expr, const char* file, int line, const char* msg) {
  std::fprintf(stderr, "ddpscope internal error: %s:%d: check '%s' failed%s%s\n", file, line, expr, msg[0] ? ": " : "",
               msg);
  std::abort();
}

// A compared value as text, for the message of a failed DDP_CHECK_EQ and friends.
template <typename T>
std::string check_value(const T& value) {
  if constexpr (std::is_enum_v<T>) {
    return std::to_string(static_cast<std::underlying_type_t<T>>(value));
  } else if constexpr (std::is_arithmetic_v<T>) {
    return std::to_string(value);
  } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    std::string quoted = "\"";
    quoted.append(std::string_view(value));
    quoted.push_back('"');
    return quoted;
  } else {
    return "(not printable)";
  }
}

[[noreturn]] inline void check_op_failed(const char* expr, const std::string& lhs, const std::string& rhs,
                                         const char* file, int line, const char* msg) {
  std::fprintf(stderr, "ddpscope internal error: %s:%d: check '%s' failed (%s vs %s)%s%s\n", file, line, expr,
               lhs.c_str(), rhs.c_str(), msg[0] ? ": " : "", msg);
  std::abort();
}

}  // namespace ddp

// DDP_CHECK(cond) or DDP_CHECK(cond, "why"): an invariant of our own code.
#define DDP_CHECK(cond, ...) ((cond) ? (void)0 : ::ddp::check_failed(#cond, __FILE__, __LINE__, "" __VA_ARGS__))

// DDP_CHECK_EQ(a, b) or DDP_CHECK_EQ(a, b, "why"), and NE, LT, LE, GT, GE: the same for a
// comparison, printing both values (each evaluated once, and copied: an operand such as
// std::max(1, n) returns a reference to a temporary), as glog's CHECK_EQ does.
#define DDP_CHECK_OP(op, a, b, ...)                                                                               \
  do {                                                                                                            \
    const auto ddp_check_a = (a);                                                                                 \
    const auto ddp_check_b = (b);                                                                                 \
    if (!(ddp_check_a op ddp_check_b)) {                                                                          \
      ::ddp::check_op_failed(#a " " #op " " #b, ::ddp::check_value(ddp_check_a), ::ddp::check_value(ddp_check_b), \
                             __FILE__, __LINE__, "" __VA_ARGS__);                                                 \
    }                                                                                                             \
  } while (false)
#define DDP_CHECK_EQ(a, b, ...) DDP_CHECK_OP(==, a, b, __VA_ARGS__)
#define DDP_CHECK_NE(a, b, ...) DDP_CHECK_OP(!=, a, b, __VA_ARGS__)
#define DDP_CHECK_LT(a, b, ...) DDP_CHECK_OP(<, a, b, __VA_ARGS__)
#define DDP_CHECK_LE(a, b, ...) DDP_CHECK_OP(<=, a, b, __VA_ARGS__)
#define DDP_CHECK_GT(a, b, ...) DDP_CHECK_OP(>, a, b, __VA_ARGS__)
#define DDP_CHECK_GE(a, b, ...) DDP_CHECK_OP(>=, a, b, __VA_ARGS__)
