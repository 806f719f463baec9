#include "probe/torch_backend.hpp"

namespace mlhost {

namespace {

using Needs = TorchBackend::Needs;
using MemoryCap = TorchBackend::MemoryCap;

// {type, accelerator, needs, memory_cap, pinned_copies, device_cache, cudnn, tf32, graphs, distributed}
constexpr TorchBackend kBackends[] = {
    {"cpu", false, Needs::kNone, MemoryCap::kTensorMemory, false, false, false, false, false, "gloo"},
    {"cuda", true, Needs::kCuda, MemoryCap::kCachingAllocator, true, true, true, true, true, "nccl"},
    {"mps", true, Needs::kMacos, MemoryCap::kWatermark, false, true, false, false, false, nullptr},
};

// A backend the table does not know: nothing of the host's applies to it but what every
// device gets, and it is not assumed to carry distributed tensors.
constexpr TorchBackend kUnknown = {"", true, Needs::kNone, MemoryCap::kNone, false, false, false, false, false, nullptr};

}  // namespace

const TorchBackend* find_torch_backend(const std::string& type) {
  for (const TorchBackend& b : kBackends)
    if (type == b.type) return &b;
  return nullptr;
}

const TorchBackend& torch_backend(const Device& d) {
  const std::string type = d.torch_device.empty() ? d.kind : d.torch_device.substr(0, d.torch_device.find(':'));
  const TorchBackend* b = find_torch_backend(type);
  return b ? *b : kUnknown;
}

}  // namespace mlhost
