#include "text/python_json.h"

#include <fmt/format.h>

namespace dsv4::text {
namespace {

void append_string(std::string& out, std::string_view text) {
  out += '"';
  for (char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20)
          out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        else
          out += c;
    }
  }
  out += '"';
}

void append_value(std::string& out, const nlohmann::ordered_json& value) {
  using value_t = nlohmann::ordered_json::value_t;
  switch (value.type()) {
    case value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, member] : value.items()) {
        if (!first) out += ", ";
        first = false;
        append_string(out, key);
        out += ": ";
        append_value(out, member);
      }
      out += '}';
      return;
    }
    case value_t::array: {
      out += '[';
      for (std::size_t i = 0; i < value.size(); ++i) {
        if (i) out += ", ";
        append_value(out, value[i]);
      }
      out += ']';
      return;
    }
    case value_t::string:
      append_string(out, value.get_ref<const std::string&>());
      return;
    case value_t::number_float: {
      const double number = value.get<double>();
      // Python writes non-finite floats as bare words (not strict JSON, but what it emits).
      if (number != number) {
        out += "NaN";
      } else if (number == std::numeric_limits<double>::infinity()) {
        out += "Infinity";
      } else if (number == -std::numeric_limits<double>::infinity()) {
        out += "-Infinity";
      } else {
        // nlohmann prints the shortest round-trip form with Python's repr thresholds for
        // switching to exponent notation (exponent < -4 or >= 16) and keeps a ".0".
        out += value.dump();
      }
      return;
    }
    default:
      out += value.dump();
      return;  // null, booleans, integers
  }
}

}  // namespace

std::string python_json_dumps(const nlohmann::ordered_json& value) {
  std::string out;
  append_value(out, value);
  return out;
}

std::string python_json_string(std::string_view text) {
  std::string out;
  append_string(out, text);
  return out;
}

}  // namespace dsv4::text
