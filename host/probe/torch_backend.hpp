// What a device is to the rest of the host, decided once: the LibTorch backend that runs it
// (the type of its torch device: "cpu", "cuda", "mps"), and what that backend means for
// choosing, planning and marking a run. Ranking, planning, the effects marking, calibration,
// the launch layout and the command line all ask this table, so a device plugin whose
// devices run on an existing backend (a third-party "cpuset" on LibTorch's cpu) gets that
// backend's defaults and effects alike, and a new LibTorch backend is one entry here plus
// its device plugin.
#pragma once

#include <string>

#include "probe/device.hpp"

namespace mlhost {

struct TorchBackend {
  const char* type;  // LibTorch's device type; "" for a backend this table does not know
  // Runs apart from the host's CPU: its loads come through data workers and page-locked
  // copies, and reduced precision is its default where it is fast.
  bool accelerator;
  // What an algorithm plugin's LibTorch must have for a device of it to be usable:
  // kNone, a CUDA build, or a build for macOS (Metal).
  enum class Needs { kNone, kCuda, kMacos } needs;
  // Where memory_fraction is a cap: kTensorMemory (mlhost's cap on LibTorch's CPU tensor
  // memory, in bytes), kCachingAllocator (CUDA's, in bytes, with PYTORCH_CUDA_ALLOC_CONF),
  // kWatermark (MPS: a share of Metal's working set), kNone (not enforced).
  enum class MemoryCap { kNone, kTensorMemory, kCachingAllocator, kWatermark } memory_cap;
  bool pinned_copies;      // copies from page-locked host memory run asynchronously (pinned_memory)
  bool device_cache;       // keeps a cache of device memory that empty_cache_steps releases
  bool cudnn;              // has cuDNN (cudnn_benchmark)
  bool tf32;               // has a TF32 mode (tf32_matmul, where the device reports TF32)
  bool graphs;             // captures a step's kernels once and replays them (cuda_graphs)
  const char* distributed; // the c10d backend that carries its tensors, nullptr: none
};

// The backend of `d`: by the type of its torch device ("cuda:1" -> cuda), or by its kind
// where a record names no torch device.
const TorchBackend& torch_backend(const Device& d);

// The entry for a LibTorch device type or a device kind a user names ("cuda" in --device
// cuda:1), or nullptr when the table has none.
const TorchBackend* find_torch_backend(const std::string& type);

}  // namespace mlhost
