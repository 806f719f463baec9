#include "probe/torch_backend.hpp"

namespace mlhost {

const TorchBackend* find_torch_backend(const std::string& type) { return mlh::find_device_traits(type); }

const TorchBackend& torch_backend(const Device& d) {
  return mlh::device_traits(d.torch_device.empty() ? d.kind : d.torch_device);
}

}  // namespace mlhost
