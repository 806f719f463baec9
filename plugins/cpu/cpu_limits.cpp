#include "cpu_limits.hpp"

#include <algorithm>

#include "cpu_text.hpp"

namespace mlh::cpu {
namespace {

// v1 writes "no limit" as the largest page-aligned signed 64-bit value (it depends on the
// page size); nobody sets a real limit of 4 EiB.
constexpr int64_t kV1Unlimited = int64_t{1} << 62;

std::optional<int64_t> positive(const FileText& text) {
  std::optional<int64_t> value = text ? parse_int(*text) : std::nullopt;
  return value && *value > 0 ? value : std::nullopt;
}

std::optional<double> cpu_limit(const CgroupFiles& g) {
  if (g.cpu_max) {
    // "max 100000" is no limit; anything but two positive integers is unusable.
    std::vector<std::string_view> parts = words(*g.cpu_max);
    std::optional<int64_t> quota = parts.size() == 2 ? parse_int(parts[0]) : std::nullopt;
    std::optional<int64_t> period = parts.size() == 2 ? parse_int(parts[1]) : std::nullopt;
    if (quota && period && *quota > 0 && *period > 0) return static_cast<double>(*quota) / static_cast<double>(*period);
  }
  std::optional<int64_t> quota = positive(g.cpu_cfs_quota_us), period = positive(g.cpu_cfs_period_us);
  if (quota && period) return static_cast<double>(*quota) / static_cast<double>(*period);
  return std::nullopt;
}

std::optional<int64_t> memory_limit(const CgroupFiles& g) {
  if (std::optional<int64_t> v2 = positive(g.memory_max)) return v2;
  std::optional<int64_t> v1 = positive(g.memory_limit_in_bytes);
  return v1 && *v1 < kV1Unlimited ? v1 : std::nullopt;
}

std::optional<int64_t> memory_usage(const CgroupFiles& g) {
  if (std::optional<int64_t> v2 = g.memory_current ? parse_int(*g.memory_current) : std::nullopt) return v2;
  return g.memory_usage_in_bytes ? parse_int(*g.memory_usage_in_bytes) : std::nullopt;
}

template <class T>
void keep_min(std::optional<T>& current, std::optional<T> candidate) {
  if (candidate && (!current || *candidate < *current)) current = candidate;
}

}  // namespace

CgroupLimits cgroup_limits(const std::vector<CgroupFiles>& levels) {
  CgroupLimits limits;
  for (const CgroupFiles& level : levels) {
    keep_min(limits.cpus, cpu_limit(level));
    std::optional<int64_t> limit = memory_limit(level);
    keep_min(limits.memory_bytes, limit);
    std::optional<int64_t> usage = memory_usage(level);
    // Usage counts reclaimable page cache too, so the headroom errs on the small side.
    if (limit && usage && *usage >= 0)
      keep_min(limits.memory_headroom_bytes, std::optional<int64_t>(std::max<int64_t>(0, *limit - *usage)));
  }
  return limits;
}

}  // namespace mlh::cpu
