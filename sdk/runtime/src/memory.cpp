// Memory statistics and hygiene (see memory.hpp).
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

#include <mlh/runtime/memory.hpp>

#include <mlh/runtime/compat.hpp>
#include <mlh/runtime/memory_limit.hpp>

#include <mlh/runtime/plan_effects.hpp>

#if MLH_TORCH_HAS_MPS_MEMORY
#include <ATen/detail/MPSHooksInterface.h>
#endif
#if MLH_TORCH_HAS_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#endif

namespace mlh::rt {
namespace {

int64_t resident_bytes() {
  // statm: total program size, then resident set, both in pages.
  std::ifstream statm("/proc/self/statm");
  int64_t size_pages = 0, resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) return 0;
  return resident_pages * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

std::optional<double> host_free_fraction() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  std::optional<double> total, available;
  while (std::getline(meminfo, line)) {
    std::istringstream fields(line);
    std::string key;
    double kib = 0;
    if (!(fields >> key >> kib)) continue;
    if (key == "MemTotal:") total = kib;
    if (key == "MemAvailable:") available = kib;
  }
  if (!total || !available || *total <= 0) return std::nullopt;
  return *available / *total;
}

#if MLH_TORCH_HAS_CUDA
c10::DeviceIndex cuda_index(at::Device device) {
  return device.has_index() ? device.index() : c10::cuda::current_device();
}
#endif

}  // namespace

MemoryStats memory_stats(at::Device device) {
  MemoryStats stats;
  stats.rss = resident_bytes();
#if MLH_TORCH_HAS_CUDA
  if (device.is_cuda()) {
    const auto cuda = c10::cuda::CUDACachingAllocator::getDeviceStats(cuda_index(device));
    // Index 0 is StatType::AGGREGATE (all pool sizes) in every LibTorch version.
    stats.allocated = cuda.allocated_bytes[0].current;
    stats.reserved = cuda.reserved_bytes[0].current;
    stats.peak = cuda.allocated_bytes[0].peak;
    stats.peak_reserved = cuda.reserved_bytes[0].peak;
  }
#endif
#if MLH_TORCH_HAS_MPS_MEMORY
  if (device.is_mps()) {
    // The MPS allocator keeps no peak: allocated and reserved (what Metal holds for it) only.
    const at::MPSHooksInterface& mps = at::detail::getMPSHooks();
    stats.allocated = static_cast<int64_t>(mps.getCurrentAllocatedMemory());
    stats.reserved = static_cast<int64_t>(mps.getDriverAllocatedMemory());
  }
#endif
  (void)device;
  return stats;
}

std::optional<double> free_memory_fraction(at::Device device) {
  if (device.is_cpu()) return host_free_fraction();
#if MLH_TORCH_HAS_CUDA
  if (device.is_cuda()) {
    c10::cuda::CUDAGuard guard(cuda_index(device));
    size_t free = 0, total = 0;
    C10_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    if (total == 0) return std::nullopt;
    return static_cast<double>(free) / static_cast<double>(total);
  }
#endif
  return std::nullopt;
}

void reset_peak_memory(at::Device device) {
  if (device.is_cpu()) reset_cpu_memory_peak();
#if MLH_TORCH_HAS_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(cuda_index(device));
#endif
}

std::optional<int64_t> tensor_memory_peak(at::Device device) {
  if (device.is_cpu()) return cpu_memory_peak();
  return memory_stats(device).peak;
}

std::optional<int64_t> capped_memory_peak(at::Device device) {
  if (device.is_cuda()) return memory_stats(device).peak_reserved;
  return tensor_memory_peak(device);
}

std::optional<int64_t> device_memory_total(at::Device device) {
  if (device.is_cpu()) {
    std::ifstream meminfo("/proc/meminfo");
    std::string key;
    int64_t kib = 0;
    while (meminfo >> key >> kib) {
      if (key == "MemTotal:") return kib * 1024;
      meminfo.ignore(1 << 10, '\n');
    }
    return std::nullopt;
  }
#if MLH_TORCH_HAS_CUDA
  if (device.is_cuda()) {
    c10::cuda::CUDAGuard guard(cuda_index(device));
    size_t free = 0, total = 0;
    C10_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    return static_cast<int64_t>(total);
  }
#endif
  return std::nullopt;
}

void empty_device_cache(at::Device device) {
#if MLH_TORCH_HAS_CUDA
  if (device.is_cuda()) {
    c10::cuda::CUDACachingAllocator::emptyCache();
    count_plan_effect("empty_cache_steps", "cache_clears");
  }
#endif
#if MLH_TORCH_HAS_MPS_MEMORY
  if (device.is_mps()) {
    at::detail::getMPSHooks().emptyCache();
    count_plan_effect("empty_cache_steps", "cache_clears");
  }
#endif
  (void)device;
}

MemoryMonitor::MemoryMonitor(at::Device device, MetricSink metric, WarnSink warn,
                             MemoryMonitorOptions options)
    : device_(device), metric_(std::move(metric)), warn_(std::move(warn)), options_(std::move(options)) {
  if (!metric_ || !warn_ || !options_.clock) throw std::invalid_argument("MemoryMonitor: missing callback");
  if (!(options_.interval_s > 0)) throw std::invalid_argument("MemoryMonitor: interval must be positive");
  if (options_.empty_cache_steps < 0) throw std::invalid_argument("MemoryMonitor: empty_cache_steps < 0");
  if (!options_.free_fraction) options_.free_fraction = [device] { return free_memory_fraction(device); };
  if (!options_.empty_cache) options_.empty_cache = [device] { empty_device_cache(device); };
  last_record_ = options_.clock();
}

MemoryMonitor::MemoryMonitor(at::Device device, const mlh::RunContext& ctx, MemoryMonitorOptions options)
    : MemoryMonitor(device, metric_sink(ctx), warn_sink(ctx), std::move(options)) {}

void MemoryMonitor::step(std::optional<int64_t> step) {
  ++steps_;
  if (options_.empty_cache_steps > 0 && steps_ % options_.empty_cache_steps == 0) options_.empty_cache();
  const double now = options_.clock();
  if (now - last_record_ < options_.interval_s) return;
  last_record_ = now;
  record(step.value_or(steps_));
}

void MemoryMonitor::record(int64_t step) {
  const MemoryStats stats = memory_stats(device_);
  if (stats.allocated) {
    metric_("memory/allocated_bytes", static_cast<double>(*stats.allocated), step);
    if (stats.reserved) metric_("memory/reserved_bytes", static_cast<double>(*stats.reserved), step);
    if (stats.peak) metric_("memory/peak_bytes", static_cast<double>(*stats.peak), step);
  } else {
    metric_("memory/rss_bytes", static_cast<double>(stats.rss), step);
  }
  // Once per run: the condition rarely clears by itself, and repeating it adds nothing.
  if (warned_) return;
  const std::optional<double> free = options_.free_fraction();
  if (free && *free < options_.low_memory_fraction) {
    warned_ = true;
    char message[256];
    std::snprintf(message, sizeof message,
                  "free memory on %s is low: %.1f%% free (warning below %.1f%%); "
                  "a smaller batch may avoid running out",
                  device_.str().c_str(), *free * 100.0, options_.low_memory_fraction * 100.0);
    warn_(message);
  }
}

}  // namespace mlh::rt
