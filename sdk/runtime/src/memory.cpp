// Memory statistics and hygiene (see memory.hpp).
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>

#include <mlh/runtime/memory.hpp>

#include <mlh/device_traits.hpp>
#include <mlh/runtime/plan_effects.hpp>

#include "backends/backend.hpp"

namespace mlh::rt {
namespace {

int64_t resident_bytes() {
  // statm: total program size, then resident set, both in pages.
  std::ifstream statm("/proc/self/statm");
  int64_t size_pages = 0, resident_pages = 0;
  if (!(statm >> size_pages >> resident_pages)) return 0;
  return resident_pages * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace

MemoryStats memory_stats(at::Device device) {
  MemoryStats stats = backends::of(device).allocator_stats(device);
  stats.rss = resident_bytes();
  return stats;
}

std::optional<double> free_memory_fraction(at::Device device) {
  const std::optional<backends::DeviceMemory> memory = backends::of(device).memory(device);
  if (!memory) return std::nullopt;
  return static_cast<double>(memory->free) / static_cast<double>(memory->total);
}

void reset_peak_memory(at::Device device) { backends::of(device).reset_peak(device); }

std::optional<int64_t> tensor_memory_peak(at::Device device) { return backends::of(device).tensor_peak(device); }

std::optional<int64_t> capped_memory_peak(at::Device device) {
  // A caching allocator's cap counts what it holds, cached blocks included.
  if (device_traits(device.str()).memory_cap == DeviceTraits::MemoryCap::kCachingAllocator)
    return memory_stats(device).peak_reserved;
  return tensor_memory_peak(device);
}

std::optional<int64_t> device_memory_total(at::Device device) {
  const std::optional<backends::DeviceMemory> memory = backends::of(device).memory(device);
  if (!memory) return std::nullopt;
  return memory->total;
}

void empty_device_cache(at::Device device) {
  if (backends::of(device).empty_cache(device)) count_plan_effect("empty_cache_steps", "cache_clears");
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
