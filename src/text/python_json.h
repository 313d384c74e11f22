// JSON text exactly as Python's json.dumps(value, ensure_ascii=False) writes it: ", " and ": "
// separators, members in insertion order, non-ASCII kept, control characters as \u00XX. The
// DeepSeek-V4 prompt embeds tool schemas and arguments in this form, so every byte matters.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace dsv4::text {

std::string python_json_dumps(const nlohmann::ordered_json& value);

// The quoted, escaped form of one string (json.dumps of a str).
std::string python_json_string(std::string_view text);

}  // namespace dsv4::text
