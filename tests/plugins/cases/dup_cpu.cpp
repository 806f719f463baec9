// dup-cpu: a correct device plugin that also calls itself "cpu" (manifest and negotiate),
// for duplicate-name tests. Its one CPU-class device is named "duplicate cpu", so a test can
// tell which of the two "cpu" plugins the host kept.
#include "simple_device.hpp"

class DuplicateCpuDevices : public mlh::DevicePlugin {
 public:
  std::vector<mlh::DeviceInfo> probe() override {
    return {mlh::testing::simple_device("cpu", "duplicate cpu")};
  }
};

MLH_DEVICE_PLUGIN(DuplicateCpuDevices)
