// Errors: the library throws dsv4::error with a one-line, contextful message (file, tensor, key,
// request id); the CLI catches it at the top and exits non-zero. Kernels never throw: they return
// a status that the backend turns into an error.
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace dsv4 {

class error : public std::runtime_error {
 public:
  explicit error(const std::string& message) : std::runtime_error(message) {}
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace dsv4

// DSV4_CHECK(cond, "fmt", args...): throw dsv4::error with the formatted message when cond is
// false.
#define DSV4_CHECK(cond, ...)               \
  do {                                      \
    if (!(cond)) ::dsv4::fail(__VA_ARGS__); \
  } while (0)
