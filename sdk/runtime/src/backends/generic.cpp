// What every backend gets, and all that one without a file of its own here gets (see
// backend.hpp).
#include "backend.hpp"

#include <stdexcept>

#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "mlh/runtime/compat.hpp"

namespace mlh::rt::backends {

// A LibTorch registers a device guard for each backend it was built with (CUDA, MPS, XPU).
bool Backend::available(at::Device device) const { return c10::impl::hasDeviceGuardImpl(device.type()); }

void Backend::synchronize(at::Device device) const {
#if MLH_TORCH_VERSION_AT_LEAST(2, 5)
  // Every accelerator LibTorch has (CUDA, MPS, XPU, a PrivateUse1 backend) registers a device
  // guard that can wait for all the device's streams.
  const c10::impl::DeviceGuardImplInterface* guard = c10::impl::getDeviceGuardImpl(device.type());
  guard->synchronizeDevice(device.has_index() ? device.index() : guard->getDevice().index());
#else
  // Older LibTorch has no device-generic wait: the backends that need one override this.
  (void)device;
#endif
}

const char* Backend::cap_caching_allocator(at::Device device, double) const {
  throw std::logic_error("the runtime has no caching allocator cap for " + device.str());
}

std::unique_ptr<GraphRecorder> Backend::graph_recorder(at::Device device, std::string* why_not) const {
  if (why_not) *why_not = "CUDA graphs need a CUDA device (this run's is " + device.str() + ")";
  return nullptr;
}

}  // namespace mlh::rt::backends
