// throw-helper: probe throws std::runtime_error("probe exploded"). The helper catches it at
// the boundary: probe returns MLH_ERR_INTERNAL with "uncaught exception: probe exploded".
#include <mlh/plugin.hpp>

#include <stdexcept>

class ThrowingDevices : public mlh::DevicePlugin {
 public:
  std::vector<mlh::DeviceInfo> probe() override { throw std::runtime_error("probe exploded"); }
};

MLH_DEVICE_PLUGIN(ThrowingDevices)
