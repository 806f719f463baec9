// name-mismatch: the manifest (written by mlh_add_plugin) says "manifest-name", while the
// library answers negotiate with the name "library-name". Otherwise a correct plugin.
#undef MLH_PLUGIN_NAME
#define MLH_PLUGIN_NAME "library-name"
#include <mlh/plugin.hpp>

class MismatchedDevices : public mlh::DevicePlugin {
 public:
  std::vector<mlh::DeviceInfo> probe() override {
    mlh::DeviceInfo d;
    d.device_class = MLH_DEVICE_CLASS_CPU;
    d.kind = "namemismatch";
    d.name = "name mismatch device";
    d.torch_device = "cpu";
    return {d};
  }
};

MLH_DEVICE_PLUGIN(MismatchedDevices)
