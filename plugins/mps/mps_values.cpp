// SystemValues -> MacSnapshot, and the key=value text of recorded machines. Both the live
// reader and the fixtures go through snapshot_from_values, so its parsing is what the
// tests exercise.
#include <charconv>

#include "mps_snapshot.hpp"

namespace mlh::mps {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::string text(const SystemValues& values, const char* name) {
  auto it = values.find(name);
  return it == values.end() ? std::string() : std::string(trim(it->second));
}

// The whole value as a decimal integer, so that a truncated or garbled recording does
// not pass for a small number.
std::optional<int64_t> number(const SystemValues& values, const char* name) {
  std::string value = text(values, name);
  int64_t n = 0;
  const char* end = value.data() + value.size();
  auto [at, error] = std::from_chars(value.data(), end, n);
  if (value.empty() || error != std::errc() || at != end) return std::nullopt;
  return n;
}

}  // namespace

SystemValues parse_values(std::string_view text) {
  SystemValues values;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t equals = line.find('=');
    std::string_view name = trim(line.substr(0, equals));
    if (equals == std::string_view::npos || name.empty() || name.front() == '#') continue;
    values[std::string(name)] = std::string(line.substr(equals + 1));
  }
  return values;
}

MacSnapshot snapshot_from_values(const SystemValues& values) {
  MacSnapshot s;
  s.os = text(values, key::kSysname);
  s.machine = text(values, key::kMachine);
  s.brand = text(values, key::kBrand);
  s.os_version = text(values, key::kOsVersion);
  s.memsize = number(values, key::kMemsize);
  s.arm64 = number(values, key::kArm64);
  s.page_free_count = number(values, key::kPageFreeCount);
  s.page_size = number(values, key::kPageSize);
  return s;
}

}  // namespace mlh::mps
