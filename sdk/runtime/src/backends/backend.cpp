// The backend of a device (see backend.hpp).
#include "backend.hpp"

#include <c10/core/DeviceType.h>

namespace mlh::rt::backends {

const Backend& cpu_backend();
const Backend& cuda_backend();
const Backend& mps_backend();

const Backend& named(const std::string& type) {
  if (type == "cpu") return cpu_backend();
  if (type == "cuda") return cuda_backend();
  if (type == "mps") return mps_backend();
  static const Backend generic;
  return generic;
}

const Backend& of(at::Device device) { return named(c10::DeviceTypeName(device.type(), /*lower_case=*/true)); }

}  // namespace mlh::rt::backends
