// Ranking: the host (not the plugins) orders the usable devices and picks one.
//
// The rule, in order (documented in docs/devices.md, "Device choice"):
//   1. a device the user asked for with --device (kind, or kind:index) is the only candidate;
//      --no-gpu removes GPUs; unavailable devices are never candidates;
//   2. device class: discrete GPU > unified-memory GPU > CPU > other;
//   3. architecture generation (the compute capability's major version), newer first;
//   4. total memory, more first;
//   5. compute units (SMs, physical cores), more first;
//   6. the plugin's score hint, higher first (only a tie-break);
//   7. plugin name, then device index (so the result is deterministic).
// Every device not chosen keeps a reason. A run measures its candidates and may reorder them
// by speed (plan/device_choice.hpp): this order is where that starts, and what it falls back to.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "probe/device.hpp"

namespace mlhost {

// --device: "auto", "cpu", "cuda", "cuda:1", "mps", "gpu" (the best ranked GPU of any kind,
// as PyTorch and Lightning users ask for one), or any plugin's device kind.
struct DeviceRequest {
  static constexpr const char* kAnyGpu = "gpu";
  std::string kind;  // empty: auto
  int index = -1;    // -1: any index

  bool is_auto() const { return kind.empty(); }
  bool matches(const Device& d) const {
    return (kind == kAnyGpu ? d.is_gpu() : d.kind == kind) && (index < 0 || d.index == index);
  }
  std::string str() const { return is_auto() ? "auto" : index < 0 ? kind : kind + ":" + std::to_string(index); }
  // Throws std::invalid_argument with a message naming the value.
  static DeviceRequest parse(const std::string& text);
};

struct RankedDevice {
  Device device;
  bool chosen = false;
  int position = 0;    // 1-based place among the candidates; 0 when not a candidate
  std::string reason;  // why chosen, or why not
};

struct Ranking {
  std::vector<RankedDevice> devices;  // candidates in rank order, then the excluded ones
  std::optional<size_t> chosen;       // index into devices
  std::string error;                  // why nothing was chosen, when nothing was
  bool requested = false;             // --device named the device: nothing else is a candidate

  const Device* chosen_device() const { return chosen ? &devices[*chosen].device : nullptr; }
};

Ranking rank_devices(const std::vector<Device>& devices, const DeviceRequest& request, bool no_gpu);

// "12.0 GiB"
std::string format_bytes(int64_t bytes);

}  // namespace mlhost
