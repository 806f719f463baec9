#include "py_json.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace trm {

std::string python_float_repr(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  // Shortest round-trip digits in scientific form: "-d.ddde[+-]x".
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string s(buf, res.ptr);
  std::string sign;
  if (s[0] == '-') {
    sign = "-";
    s.erase(0, 1);
  }
  const size_t e = s.find('e');
  const int exp10 = std::atoi(s.c_str() + e + 1);
  std::string digits = s.substr(0, e);
  if (digits.size() > 1) digits.erase(1, 1);  // drop the '.'
  // Python (format_float_short, repr): decpt = exp10 + 1; scientific when decpt <= -4 or > 16.
  const int decpt = exp10 + 1;
  std::string out;
  if (decpt <= -4 || decpt > 16) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    out += eb;
  } else if (decpt <= 0) {
    out = "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
  } else if (static_cast<size_t>(decpt) >= digits.size()) {
    out = digits + std::string(static_cast<size_t>(decpt) - digits.size(), '0') + ".0";
  } else {
    out = digits.substr(0, static_cast<size_t>(decpt)) + "." + digits.substr(static_cast<size_t>(decpt));
  }
  return sign + out;
}

void python_json_dumps(const nlohmann::ordered_json& j, std::string& out) {
  using T = nlohmann::ordered_json::value_t;
  switch (j.type()) {
    case T::object: {
      out += '{';
      bool first = true;
      for (auto it = j.begin(); it != j.end(); ++it) {
        if (!first) out += ", ";
        first = false;
        // nlohmann's ensure_ascii escaping matches Python's: \" \\ \b \f \n \r \t, other
        // characters below 0x20 and from 0x7f up as \u00xx / UTF-16 pairs, lowercase hex.
        out += nlohmann::ordered_json(it.key()).dump(-1, ' ', true);
        out += ": ";
        python_json_dumps(it.value(), out);
      }
      out += '}';
      break;
    }
    case T::array: {
      out += '[';
      bool first = true;
      for (const auto& v : j) {
        if (!first) out += ", ";
        first = false;
        python_json_dumps(v, out);
      }
      out += ']';
      break;
    }
    case T::number_float:
      out += python_float_repr(j.get<double>());
      break;
    default:  // strings, integers, booleans, null: the same text in both
      out += j.dump(-1, ' ', true);
      break;
  }
}

std::string python_json_dumps(const nlohmann::ordered_json& j) {
  std::string out;
  python_json_dumps(j, out);
  return out;
}

}  // namespace trm
