#include <mlh/plugin.hpp>
class CpuDevices : public mlh::DevicePlugin {
 public:
  std::vector<mlh::DeviceInfo> probe() override {
    mlh::DeviceInfo d; d.kind = "cpu"; d.name = "cpu"; d.torch_device = "cpu"; d.device_class = MLH_DEVICE_CLASS_CPU;
    return {d};
  }
};
MLH_DEVICE_PLUGIN(CpuDevices)
