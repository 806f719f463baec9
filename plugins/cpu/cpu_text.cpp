#include "cpu_text.hpp"

#include <charconv>

namespace mlh::cpu {
namespace {

// Linux builds for at most 8192 CPUs (NR_CPUS); anything far above is garbage, and
// rejecting it keeps a corrupt "0-2000000000" from allocating a giant set.
constexpr int64_t kMaxCpuNumber = 65535;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

}  // namespace

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split(std::string_view s, char separator) {
  std::vector<std::string_view> out;
  for (;;) {
    size_t at = s.find(separator);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_space(s[i])) ++i;
    size_t start = i;
    while (i < s.size() && !is_space(s[i])) ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

std::optional<int64_t> parse_int(std::string_view s) {
  s = trim(s);
  int64_t value = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return value;
}

std::optional<std::set<int>> parse_cpu_list(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  std::set<int> cpus;
  for (std::string_view piece : split(s, ',')) {
    std::vector<std::string_view> ends = split(piece, '-');
    if (ends.size() > 2) return std::nullopt;
    std::optional<int64_t> first = parse_int(ends[0]);
    std::optional<int64_t> last = ends.size() == 2 ? parse_int(ends[1]) : first;
    if (!first || !last || *first < 0 || *last < *first || *last > kMaxCpuNumber) return std::nullopt;
    for (int64_t cpu = *first; cpu <= *last; ++cpu) cpus.insert(static_cast<int>(cpu));
  }
  return cpus;
}

std::string format_cpu_list(const std::set<int>& cpus) {
  std::string out;
  for (auto it = cpus.begin(); it != cpus.end();) {
    int first = *it, last = *it;
    for (++it; it != cpus.end() && *it == last + 1; ++it) last = *it;
    if (!out.empty()) out += ',';
    out += std::to_string(first);
    if (last != first) out += '-' + std::to_string(last);
  }
  return out;
}

std::optional<std::string> field_value(std::string_view text, std::string_view key) {
  for (std::string_view line : split(text, '\n')) {
    size_t colon = line.find(':');
    if (colon != std::string_view::npos && trim(line.substr(0, colon)) == key)
      return std::string(trim(line.substr(colon + 1)));
  }
  return std::nullopt;
}

std::optional<int64_t> meminfo_bytes(std::string_view meminfo, std::string_view key) {
  std::optional<std::string> value = field_value(meminfo, key);
  if (!value) return std::nullopt;
  std::vector<std::string_view> parts = words(*value);
  if (parts.size() != 2 || parts[1] != "kB") return std::nullopt;
  std::optional<int64_t> kib = parse_int(parts[0]);
  if (!kib || *kib < 0 || *kib > INT64_MAX / 1024) return std::nullopt;
  return *kib * 1024;
}

}  // namespace mlh::cpu
