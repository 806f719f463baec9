#include "mps_probe.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "mps_version.hpp"

namespace mlh::mps {
namespace {

constexpr int kMinMajor = 12, kMinMinor = 3;  // the first macOS the MPS backend runs on
constexpr int kBf16Major = 14;                // MPS has bfloat16 from macOS 14 (Sonoma)

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

bool is_apple_silicon(const MacSnapshot& s) { return s.arm64 == 1 || starts_with(s.brand, "Apple "); }

std::string not_apple_silicon(const MacSnapshot& s) {
  const std::string what = "MPS needs Apple Silicon (";
  if (s.brand.find("Intel") != std::string::npos) return what + "this Mac has an Intel CPU: " + s.brand + ")";
  if (!s.brand.empty()) return what + "this Mac's CPU is " + s.brand + ")";
  return what + "this Mac reports neither hw.optional.arm64 nor an Apple CPU brand)";
}

std::string too_old(const MacSnapshot& s, bool version_known) {
  const std::string what = "MPS needs macOS 12.3 or later (";
  if (version_known) return what + "this is macOS " + s.os_version + ")";
  if (s.os_version.empty()) return what + "the macOS version is unknown: kern.osproductversion is missing)";
  return what + "the macOS version is unknown: kern.osproductversion reads \"" + s.os_version + "\")";
}

nlohmann::ordered_json text_or_null(const std::string& s) {
  return s.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(s);
}

std::string details_json(const MacSnapshot& s, bool version_known) {
  nlohmann::ordered_json details;
  details["macos_version"] = version_known ? text_or_null(s.os_version) : nullptr;
  details["chip"] = text_or_null(s.brand);
  details["apple_silicon"] = is_apple_silicon(s);
  details["memsize"] = s.memsize ? nlohmann::ordered_json(*s.memsize) : nullptr;
  details["architecture"] = text_or_null(s.machine);
  return details.dump();
}

std::optional<int64_t> free_bytes(const MacSnapshot& s) {
  if (!s.page_free_count || !s.page_size || *s.page_free_count < 0 || *s.page_size <= 0) return std::nullopt;
  // Capped at memsize, which also keeps the product from overflowing on garbage counts.
  int64_t max_pages = (s.memsize && *s.memsize > 0 ? *s.memsize : INT64_MAX) / *s.page_size;
  return std::min(*s.page_free_count, max_pages) * *s.page_size;
}

DeviceInfo unavailable(DeviceInfo d, std::string reason) {
  d.available = false;
  d.precisions = 0;  // it runs nothing
  d.unavailable_reason = std::move(reason);
  return d;
}

}  // namespace

DeviceInfo probe_mps(const MacSnapshot& s) {
  DeviceInfo d;
  d.device_class = MLH_DEVICE_CLASS_UNIFIED_GPU;
  d.index = 0;
  d.kind = "mps";
  d.name = "Apple GPU (MPS)";
  d.vendor = "Apple";
  d.torch_device = "mps";
  if (s.os != "Darwin")
    return unavailable(std::move(d), "MPS needs macOS 12.3+ on Apple Silicon (this is " +
                                         (s.os.empty() ? "an unknown OS" : s.os) + ")");

  std::optional<MacosVersion> version = parse_macos_version(s.os_version);
  if (version) d.driver_version = d.runtime_version = s.os_version;
  d.details_json = details_json(s, version.has_value());
  if (!is_apple_silicon(s)) return unavailable(std::move(d), not_apple_silicon(s));
  if (!version || !at_least(*version, kMinMajor, kMinMinor))
    return unavailable(std::move(d), too_old(s, version.has_value()));

  d.available = true;
  if (!s.brand.empty()) d.name = s.brand + " GPU";
  d.memory_total_bytes = s.memsize && *s.memsize > 0 ? *s.memsize : MLH_UNKNOWN;
  d.memory_free_bytes = free_bytes(s).value_or(MLH_UNKNOWN);
  d.memory_unified = true;
  d.precisions = MLH_PRECISION_FP32 | MLH_PRECISION_FP16;
  if (version->major >= kBf16Major) d.precisions |= MLH_PRECISION_BF16;
  d.fast_precisions = MLH_PRECISION_FP32;
  d.limitations = MLH_LIMIT_NO_DISTRIBUTED | MLH_LIMIT_NO_FP16_AUTOCAST | MLH_LIMIT_NO_GRAPH_COMPILE;
  return d;
}

}  // namespace mlh::mps
