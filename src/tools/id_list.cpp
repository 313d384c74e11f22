#include "tools/id_list.h"

#include <charconv>

#include "core/error.h"

namespace dsv4::tools {

std::vector<int64_t> parse_int_list(const std::string& text, const std::string& option) {
  std::vector<int64_t> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string item = text.substr(start, end - start);
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    int64_t v = 0;
    const auto r = std::from_chars(item.data(), item.data() + item.size(), v);
    DSV4_CHECK(!item.empty() && r.ec == std::errc() && r.ptr == item.data() + item.size(),
               "{}: '{}' is not an integer", option, item);
    out.push_back(v);
    start = end + 1;
  }
  DSV4_CHECK(!out.empty(), "{}: empty list", option);
  return out;
}

}  // namespace dsv4::tools
