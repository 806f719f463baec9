// Parsers for the small text formats of /proc and /sys. All of them accept any input:
// malformed text gives nullopt (or is skipped), never an exception.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace mlh::cpu {

std::string_view trim(std::string_view s);

// Pieces between separators (empty pieces kept), and whitespace-separated words.
std::vector<std::string_view> split(std::string_view s, char separator);
std::vector<std::string_view> words(std::string_view s);

// A whole string (surrounding whitespace allowed) as a decimal integer.
std::optional<int64_t> parse_int(std::string_view s);

// A kernel CPU list such as "0-3,8,10-11" (cpuset, online, Cpus_allowed_list).
// nullopt when malformed or empty.
std::optional<std::set<int>> parse_cpu_list(std::string_view s);
// The inverse: {0,1,2,3,8} -> "0-3,8".
std::string format_cpu_list(const std::set<int>& cpus);

// The value of the first "<key>:<value>" line (as in /proc/meminfo, /proc/<pid>/status),
// trimmed; nullopt when no line has that key.
std::optional<std::string> field_value(std::string_view text, std::string_view key);

// A /proc/meminfo figure such as "MemTotal:  16318412 kB", in bytes. Lines without the
// kB unit are rejected: a truncated line must not pass for a small number.
std::optional<int64_t> meminfo_bytes(std::string_view meminfo, std::string_view key);

}  // namespace mlh::cpu
