// The CPU: the host's memory, and mlhost's capped tensor allocator (memory_limit.hpp), which
// keeps the peak LibTorch's CPU allocator does not. Kernels run synchronously.
#include "backend.hpp"

#include <fstream>
#include <string>

#include "mlh/runtime/memory_limit.hpp"

namespace mlh::rt::backends {
namespace {

class CpuBackend : public Backend {
 public:
  bool available(at::Device) const override { return true; }
  void synchronize(at::Device) const override {}

  // MemAvailable (what can be had without swapping) and MemTotal.
  std::optional<DeviceMemory> memory(at::Device) const override {
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    int64_t kib = 0;
    std::optional<int64_t> total, available;
    while (meminfo >> key >> kib) {
      if (key == "MemTotal:") total = kib * 1024;
      if (key == "MemAvailable:") available = kib * 1024;
      meminfo.ignore(1 << 10, '\n');
    }
    if (!total || !available || *total <= 0) return std::nullopt;
    return DeviceMemory{*available, *total};
  }

  void reset_peak(at::Device) const override { reset_cpu_memory_peak(); }
  std::optional<int64_t> tensor_peak(at::Device) const override { return cpu_memory_peak(); }
};

}  // namespace

const Backend& cpu_backend() {
  static const CpuBackend backend;
  return backend;
}

}  // namespace mlh::rt::backends
