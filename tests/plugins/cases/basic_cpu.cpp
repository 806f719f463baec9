// A correct helper-based device plugin with one CPU-class device whose kind is the plugin's
// name. The original of the wrong-arch case: the build copies it and patches the copy's
// ELF machine field, so the copy is a real plugin for another architecture.
#include <mlh/plugin.hpp>

class BasicCpuDevices : public mlh::DevicePlugin {
 public:
  std::vector<mlh::DeviceInfo> probe() override {
    mlh::DeviceInfo d;
    d.device_class = MLH_DEVICE_CLASS_CPU;
    d.kind = MLH_PLUGIN_NAME;
    d.name = MLH_PLUGIN_NAME " device";
    d.vendor = "mlhost tests";
    d.torch_device = "cpu";
    d.memory_unified = true;
    d.compute_units = 1;
    d.logical_units = 1;
    d.recommended_threads = 1;
    return {d};
  }
};

MLH_DEVICE_PLUGIN(BasicCpuDevices)
