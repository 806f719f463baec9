// Apple's GPUs: Metal's allocator through LibTorch's MPS hooks (LibTorch 2.x). The plan's
// memory cap is the host's PYTORCH_MPS_HIGH_WATERMARK_RATIO, set before the worker starts.
#include "backend.hpp"

#include "mlh/runtime/compat.hpp"

#if MLH_TORCH_HAS_MPS_MEMORY
#include <ATen/detail/MPSHooksInterface.h>
#endif

namespace mlh::rt::backends {
namespace {

class MpsBackend : public Backend {
#if MLH_TORCH_HAS_MPS_MEMORY
 public:
#if !MLH_TORCH_VERSION_AT_LEAST(2, 5)
  // From 2.5 the generic wait (MPSGuardImpl::synchronizeDevice) does this.
  void synchronize(at::Device) const override { at::detail::getMPSHooks().deviceSynchronize(); }
#endif

  // The MPS allocator keeps no peak: allocated and reserved (what Metal holds for it) only.
  MemoryStats allocator_stats(at::Device) const override {
    const at::MPSHooksInterface& mps = at::detail::getMPSHooks();
    MemoryStats stats;
    stats.allocated = static_cast<int64_t>(mps.getCurrentAllocatedMemory());
    stats.reserved = static_cast<int64_t>(mps.getDriverAllocatedMemory());
    return stats;
  }

  bool empty_cache(at::Device) const override {
    at::detail::getMPSHooks().emptyCache();
    return true;
  }
#endif
};

}  // namespace

const Backend& mps_backend() {
  static const MpsBackend backend;
  return backend;
}

}  // namespace mlh::rt::backends
