// What the runtime does on one LibTorch backend that LibTorch's device-generic API does not do
// for it: the mechanisms. Which of them a run uses is the device trait table's decision
// (mlh/device_traits.hpp: memory_cap, pinned_copies, device_cache, graphs, the autocast
// rules), read by the runtime's device-generic code; only these files name a backend.
//
//   cpu.cpp      the host's memory: /proc/meminfo, mlhost's capped tensor allocator
//   cuda.cpp     the caching allocator, cudaMemGetInfo, cuBLAS's determinism, CUDA graphs,
//                the generators of every GPU
//   mps.cpp      Metal's allocator through LibTorch's MPS hooks
//   generic.cpp  what every backend gets (waiting for its queued work through LibTorch's
//                device guard) and all an unknown one (xpu, a PrivateUse1 backend) gets
//   backend.cpp  the backend of a device
//
// A new backend is an entry in the trait table, and a file here where it has more than the
// generic mechanisms (docs/code-map.md lists the whole change).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <ATen/core/Generator.h>
#include <c10/core/Device.h>

#include "mlh/runtime/memory.hpp"
#include "mlh/runtime/step_graph.hpp"

namespace mlh::rt::backends {

struct DeviceMemory {
  int64_t free = 0;
  int64_t total = 0;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // Whether this LibTorch, and the runtime built against it, can run tensors on `device`.
  virtual bool available(at::Device device) const;

  // Waits until the work queued on `device` is done: kernels launch asynchronously on an
  // accelerator, so a step timed without this would time only the launches.
  virtual void synchronize(at::Device device) const;

  // The allocator's view of the device (MemoryStats without rss); empty where it keeps none.
  virtual MemoryStats allocator_stats(at::Device) const { return {}; }
  // Free and total memory of the device; nullopt where unknown.
  virtual std::optional<DeviceMemory> memory(at::Device) const { return std::nullopt; }
  // Starts the allocator's peak afresh.
  virtual void reset_peak(at::Device) const {}
  // The most tensor memory held since reset_peak().
  virtual std::optional<int64_t> tensor_peak(at::Device device) const { return allocator_stats(device).peak; }
  // Returns the allocator's unused cached blocks to the driver; false where it has no cache.
  virtual bool empty_cache(at::Device) const { return false; }
  // Caps what the device's caching allocator may hold (trait memory_cap kCachingAllocator),
  // returning the name of the mechanism for the run's report.
  virtual const char* cap_caching_allocator(at::Device device, double fraction) const;
  // Before the first kernel of a run in deterministic mode.
  virtual void prepare_deterministic() const {}
  // The default generators of every device of this backend, in index order (checkpointed
  // beside the CPU's); empty where this backend has none of its own.
  virtual std::vector<at::Generator> generators() const { return {}; }
  // A recorder of a step's kernels as a graph (trait graphs), or nullptr with the reason.
  virtual std::unique_ptr<GraphRecorder> graph_recorder(at::Device device, std::string* why_not) const;
};

// The backend of a device: its type's file here, or the generic one.
const Backend& of(at::Device device);
// The backend of a LibTorch device type by its name in the trait table ("cuda").
const Backend& named(const std::string& type);

}  // namespace mlh::rt::backends
