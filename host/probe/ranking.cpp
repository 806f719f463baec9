#include "probe/ranking.hpp"

#include <algorithm>
#include <cstdio>
#include <regex>
#include <stdexcept>

namespace mlhost {
namespace {

// The architecture generation: the compute capability's major version. Minor versions
// within a generation are not a measure of power (an RTX 3060 is 8.6, an A100 8.0), so
// they are left to memory and compute units.
int capability(const Device& d) { return d.capability_major == MLH_UNKNOWN ? -1 : d.capability_major; }

std::string capability_text(const Device& d) {
  return capability(d) < 0 ? "unknown"
                           : std::to_string(d.capability_major) + "." + std::to_string(d.capability_minor);
}

std::string count_text(int64_t v) { return v == MLH_UNKNOWN ? "unknown" : std::to_string(v); }

// The first rule where a ranks below the chosen device `best`, in words; empty if none.
std::string why_below(const Device& a, const Device& best) {
  const std::string than = " than the chosen " + best.id();
  if (a.device_class != best.device_class)
    return std::string("lower device class (") + device_class_name(a.device_class) + ")" + than + " (" +
           device_class_name(best.device_class) + ")";
  if (capability(a) != capability(best))
    return "older architecture (compute capability " + capability_text(a) + ")" + than + " (" + capability_text(best) +
           ")";
  if (a.memory_total_bytes != best.memory_total_bytes)
    return "less memory (" + format_bytes(a.memory_total_bytes) + ")" + than + " (" +
           format_bytes(best.memory_total_bytes) + ")";
  if (a.compute_units != best.compute_units)
    return "fewer compute units (" + count_text(a.compute_units) + ")" + than + " (" +
           count_text(best.compute_units) + ")";
  if (a.score_hint != best.score_hint)
    return "lower plugin preference (" + std::to_string(a.score_hint) + ")" + than + " (" +
           std::to_string(best.score_hint) + ")";
  return "ranks equal to the chosen " + best.id() + "; ordered after it by plugin name and index";
}

// True when a ranks above b.
bool ranks_above(const Device& a, const Device& b) {
  if (a.device_class != b.device_class) return a.device_class > b.device_class;
  if (capability(a) != capability(b)) return capability(a) > capability(b);
  if (a.memory_total_bytes != b.memory_total_bytes) return a.memory_total_bytes > b.memory_total_bytes;
  if (a.compute_units != b.compute_units) return a.compute_units > b.compute_units;
  if (a.score_hint != b.score_hint) return a.score_hint > b.score_hint;
  if (a.plugin != b.plugin) return a.plugin < b.plugin;
  return a.index < b.index;
}

}  // namespace

DeviceRequest DeviceRequest::parse(const std::string& text) {
  // A kind is any device plugin's kind; plugin names allow '-', so kinds may too.
  static const std::regex pattern("^([a-z][a-z0-9_-]*)(:([0-9]{1,4}))?$");
  DeviceRequest r;
  if (text.empty() || text == "auto") return r;
  std::smatch m;
  if (!std::regex_match(text, m, pattern))
    throw std::invalid_argument("--device '" + text +
                                "' is not a device: use auto, cpu, gpu, cuda, cuda:N, mps, or a plugin's <kind>[:N]");
  r.kind = m[1];
  if (m[3].matched) r.index = std::stoi(m[3]);
  return r;
}

std::string format_bytes(int64_t bytes) {
  if (bytes < 0) return "unknown";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
  return buf;
}

Ranking rank_devices(const std::vector<Device>& devices, const DeviceRequest& request, bool no_gpu) {
  Ranking out;
  out.requested = !request.is_auto();
  std::vector<RankedDevice> candidates, excluded;
  for (const Device& d : devices) {
    RankedDevice r{d, false, 0, ""};
    if (!request.is_auto() && !request.matches(d))
      r.reason = "not requested (--device " + request.str() + ")";
    else if (!d.available)
      r.reason = "unavailable: " + d.unavailable_reason;
    else if (no_gpu && d.is_gpu())
      r.reason = "excluded by --no-gpu";
    else {
      candidates.push_back(r);
      continue;
    }
    excluded.push_back(r);
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const RankedDevice& a, const RankedDevice& b) { return ranks_above(a.device, b.device); });

  for (size_t i = 0; i < candidates.size(); ++i) {
    candidates[i].position = static_cast<int>(i + 1);
    if (i > 0) candidates[i].reason = why_below(candidates[i].device, candidates[0].device);
  }
  if (!candidates.empty()) {
    RankedDevice& best = candidates[0];
    best.chosen = true;
    best.reason = request.is_auto()
                      ? std::string("highest ranked: ") + device_class_name(best.device.device_class) +
                            (candidates.size() > 1 ? ", ahead of " + std::to_string(candidates.size() - 1) + " other" +
                                                         (candidates.size() > 2 ? "s" : "")
                                                   : ", the only usable device")
                      : "requested with --device " + request.str();
    out.chosen = 0;
  } else if (!request.is_auto()) {
    std::string seen;
    for (const auto& r : excluded)
      if (request.matches(r.device)) seen += (seen.empty() ? "" : "; ") + r.device.id() + " " + r.reason;
    out.error = seen.empty() ? "no device matches --device " + request.str()
                             : "requested device " + request.str() + " cannot be used: " + seen;
  } else {
    out.error = devices.empty() ? "no device plugin reported a device" : "no usable device (all were excluded)";
  }
  out.devices = std::move(candidates);
  out.devices.insert(out.devices.end(), excluded.begin(), excluded.end());
  return out;
}

}  // namespace mlhost
