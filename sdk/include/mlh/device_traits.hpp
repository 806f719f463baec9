// What a LibTorch backend (the type of a torch device: "cpu", "cuda", "mps") means to the host
// and to the worker's runtime, declared once for both: whether it is an accelerator, how its
// memory is capped, which of the plan's switches exist on it, which precisions its autocast
// runs, and which c10d backend carries its tensors. The host's probe, ranking, planning,
// effects marking, calibration, launch layout and command line read it through
// host/probe/torch_backend.hpp; the worker's runtime reads it directly (pinned copies, memory
// caps, autocast, waiting for queued work), and keeps each backend's mechanisms in one file
// of sdk/runtime/src/backends/. A new LibTorch backend is one entry here plus its device
// plugin (docs/code-map.md lists the rest).
//
// Header-only and free of LibTorch: the host, device plugins and the runtime all include it.
#ifndef MLH_DEVICE_TRAITS_HPP
#define MLH_DEVICE_TRAITS_HPP

#include <string>

namespace mlh {

struct DeviceTraits {
  const char* type;  // LibTorch's device type, also its standard device plugin's name; "" unknown
  const char* name;  // how messages name its tensors ("MPS")
  // Runs apart from the host's CPU: its loads come through data workers and page-locked
  // copies, and reduced precision is its default where it is fast.
  bool accelerator;
  // What an algorithm plugin's LibTorch must have for a device of it to be usable: kNone, a
  // CUDA build, or a build for macOS. The host now reads which device types a plugin's
  // LibTorch runs from its manifest (build.torch.backends); kept, true, for SDK users.
  enum class Needs { kNone, kCuda, kMacos };
  [[deprecated("the host reads build.torch.backends from the algorithms' manifests; use find_device_traits(type) "
               "and the manifest's list instead")]] Needs needs;
  // Where memory_fraction is a cap: kTensorMemory (mlhost's cap on LibTorch's CPU tensor
  // memory, in bytes), kCachingAllocator (CUDA's, in bytes, with PYTORCH_CUDA_ALLOC_CONF),
  // kWatermark (MPS: a share of Metal's working set), kNone (not enforced).
  enum class MemoryCap { kNone, kTensorMemory, kCachingAllocator, kWatermark } memory_cap;
  bool pinned_copies;       // copies from page-locked host memory run asynchronously (pinned_memory)
  bool device_cache;        // keeps a cache of device memory that empty_cache_steps releases
  bool cudnn;               // has cuDNN (cudnn_benchmark)
  bool tf32;                // has a TF32 mode (tf32_matmul, where the device reports TF32)
  bool graphs;              // captures a step's kernels once and replays them (cuda_graphs)
  const char* distributed;  // the c10d backend that carries its tensors, nullptr: none
  // The first LibTorch (major, minor) that releases its device cache; {0, 0}: any.
  int cache_release_torch[2];
  // Which reduced precisions LibTorch's autocast runs on it (the runtime's AutocastScope
  // refuses the others): fp16, and bf16 from bf16_torch on ({0, 0}: any LibTorch), needing
  // bf16_needs besides.
  bool fp16_autocast;
  bool bf16_autocast;
  int bf16_torch[2];
  const char* bf16_needs;  // "" or e.g. "macOS 14 or later"
};

// {type, name, accelerator, needs, memory_cap, pinned_copies, device_cache, cudnn, tf32, graphs,
//  distributed, cache_release_torch, fp16_autocast, bf16_autocast, bf16_torch, bf16_needs}
inline constexpr DeviceTraits kDeviceTraits[] = {
    {"cpu", "CPU", false, DeviceTraits::Needs::kNone, DeviceTraits::MemoryCap::kTensorMemory, false, false, false,
     false, false, "gloo", {0, 0}, false, true, {0, 0}, ""},
    {"cuda", "CUDA", true, DeviceTraits::Needs::kCuda, DeviceTraits::MemoryCap::kCachingAllocator, true, true, true,
     true, true, "nccl", {0, 0}, true, true, {0, 0}, ""},
    {"mps", "MPS", true, DeviceTraits::Needs::kMacos, DeviceTraits::MemoryCap::kWatermark, false, true, false, false,
     false, nullptr, {2, 0}, false, true, {2, 6}, "macOS 14 or later"},
};

// A backend the table does not know: nothing applies to it but what every device gets, and it
// is not assumed to carry distributed tensors.
inline constexpr DeviceTraits kUnknownDeviceTraits = {
    "", "", true, DeviceTraits::Needs::kNone, DeviceTraits::MemoryCap::kNone, false, false, false, false, false,
    nullptr, {0, 0}, false, false, {0, 0}, ""};

// The entry for a LibTorch device type ("cuda"), or nullptr.
inline const DeviceTraits* find_device_traits(const std::string& type) {
  for (const DeviceTraits& t : kDeviceTraits)
    if (type == t.type) return &t;
  return nullptr;
}

// The traits of a torch device ("cuda:1" -> cuda's), kUnknownDeviceTraits for a type the table
// does not know.
inline const DeviceTraits& device_traits(const std::string& torch_device) {
  const DeviceTraits* t = find_device_traits(torch_device.substr(0, torch_device.find(':')));
  return t ? *t : kUnknownDeviceTraits;
}

}  // namespace mlh

#endif  // MLH_DEVICE_TRAITS_HPP
