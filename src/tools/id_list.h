// Parsing of comma-separated integer lists given on the command line ("1,2,3").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dsv4::tools {

// Throws dsv4::error naming `option` for an empty list, a non-integer or an out-of-range entry.
std::vector<int64_t> parse_int_list(const std::string& text, const std::string& option);

}  // namespace dsv4::tools
