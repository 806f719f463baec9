// Memory statistics and hygiene for a training loop: what the process and the device hold,
// recorded at an interval; the device cache released every plan.empty_cache_steps steps;
// one warning when free device memory runs low, before an out-of-memory error ends the run.
//
//   mlh::rt::MemoryMonitorOptions options;
//   options.empty_cache_steps = plan.empty_cache_steps;
//   mlh::rt::MemoryMonitor memory(device, ctx, options);
//   for (...) { train_step(batch); memory.step(); }
#pragma once

#include <cstdint>
#include <functional>
#include <optional>

#include <c10/core/Device.h>

#include <mlh/plugin.hpp>
#include <mlh/runtime/throughput.hpp>  // MetricSink, WarnSink, Clock

namespace mlh::rt {

struct MemoryStats {
  // The caching allocator's view of a CUDA device, or of an MPS device in LibTorch 2.x builds
  // (which keep no peak).
  std::optional<int64_t> allocated;  // bytes held by tensors
  std::optional<int64_t> reserved;   // bytes held by the allocator, tensors and cache
  std::optional<int64_t> peak;       // most bytes held by tensors at once (CUDA)
  std::optional<int64_t> peak_reserved;  // most bytes the allocator held at once (CUDA)
  int64_t rss = 0;                   // the process's resident host memory, bytes
};

MemoryStats memory_stats(at::Device device);

// Free memory as a fraction of the total: for CUDA the device's, for the CPU the host's
// (MemAvailable of MemTotal); nullopt where unknown (other devices, no /proc).
std::optional<double> free_memory_fraction(at::Device device);

// Returns the caching allocator's unused blocks to the driver: CUDA, and MPS in LibTorch 2.x
// builds; nothing elsewhere. Counted in the run's report (plan_effects.hpp).
void empty_device_cache(at::Device device);

// Starts MemoryStats::peak afresh from what is held now (CUDA), to compare the peaks of two
// pieces of work in one process; on the CPU the tensor-memory peak of memory_limit.hpp.
void reset_peak_memory(at::Device device);

// The most tensor memory held since reset_peak_memory(): CUDA's caching allocator's peak, or
// on the CPU the capped allocator's (memory_limit.hpp; 0 before a cap was set).
std::optional<int64_t> tensor_memory_peak(at::Device device);
// What a memory cap counts since the last reset: on CUDA the caching allocator's reserved
// peak (the plan's memory fraction caps what the allocator holds, cached blocks included);
// elsewhere the tensor peak.
std::optional<int64_t> capped_memory_peak(at::Device device);

// The device's memory in bytes: CUDA's total, the host's MemTotal for the CPU; nothing where
// unknown.
std::optional<int64_t> device_memory_total(at::Device device);

struct MemoryMonitorOptions {
  double interval_s = 10.0;           // between metric emissions and free-memory checks
  int64_t empty_cache_steps = 0;      // the plan's empty_cache_steps; 0: never
  double low_memory_fraction = 0.10;  // warn when the free fraction falls below this
  Clock clock = steady_seconds;
  // Injectable for tests; empty: free_memory_fraction(device) and empty_device_cache(device).
  std::function<std::optional<double>()> free_fraction;
  std::function<void()> empty_cache;
};

class MemoryMonitor {
 public:
  // Emits "memory/rss_bytes" for a CPU device, "memory/allocated_bytes",
  // "memory/reserved_bytes" and "memory/peak_bytes" for a CUDA device, the first two for MPS
  // (LibTorch 2.x).
  MemoryMonitor(at::Device device, MetricSink metric, WarnSink warn, MemoryMonitorOptions options = {});
  MemoryMonitor(at::Device device, const mlh::RunContext& ctx, MemoryMonitorOptions options = {});

  // One training step just finished. `step` labels the metrics; by default the number of
  // steps counted so far.
  void step(std::optional<int64_t> step = std::nullopt);

 private:
  void record(int64_t step);

  at::Device device_;
  MetricSink metric_;
  WarnSink warn_;
  MemoryMonitorOptions options_;
  double last_record_;
  int64_t steps_ = 0;
  bool warned_ = false;
};

}  // namespace mlh::rt
