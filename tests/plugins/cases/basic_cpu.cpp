// A correct helper-based device plugin with one CPU-class device whose kind is the plugin's
// name. The original of the wrong-arch case: the build copies it and patches the copy's
// ELF machine field, so the copy is a real plugin for another architecture.
#include "simple_device.hpp"

class BasicCpuDevices : public mlh::DevicePlugin {
 public:
  std::vector<mlh::DeviceInfo> probe() override {
    return {mlh::testing::simple_device(MLH_PLUGIN_NAME, MLH_PLUGIN_NAME " device")};
  }
};

MLH_DEVICE_PLUGIN(BasicCpuDevices)
