#include "mps_version.hpp"

#include <charconv>

namespace mlh::mps {
namespace {

// Apple's numbering is in the tens; the bound keeps a corrupt value from passing.
constexpr int kMaxPart = 9999;

std::optional<int> part(std::string_view s) {
  int n = 0;
  auto [end, error] = std::from_chars(s.data(), s.data() + s.size(), n);
  // from_chars accepts a leading '-', which a version part never has.
  if (s.empty() || s.front() == '-' || error != std::errc() || end != s.data() + s.size() || n > kMaxPart)
    return std::nullopt;
  return n;
}

}  // namespace

std::optional<MacosVersion> parse_macos_version(std::string_view text) {
  int parts[3] = {0, 0, 0};
  for (int& p : parts) {
    size_t dot = text.find('.');
    std::optional<int> n = part(text.substr(0, dot));
    if (!n) return std::nullopt;
    p = *n;
    if (dot == std::string_view::npos) return MacosVersion{parts[0], parts[1], parts[2]};
    text.remove_prefix(dot + 1);
  }
  return std::nullopt;  // more than three parts
}

bool at_least(const MacosVersion& v, int major, int minor) {
  return v.major > major || (v.major == major && v.minor >= minor);
}

}  // namespace mlh::mps
