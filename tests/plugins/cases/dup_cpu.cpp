// dup-cpu: a correct device plugin that also calls itself "cpu" (manifest and negotiate),
// for duplicate-name tests. Its one CPU-class device is named "duplicate cpu", so a test can
// tell which of the two "cpu" plugins the host kept.
#include <mlh/plugin.hpp>

class DuplicateCpuDevices : public mlh::DevicePlugin {
 public:
  std::vector<mlh::DeviceInfo> probe() override {
    mlh::DeviceInfo d;
    d.device_class = MLH_DEVICE_CLASS_CPU;
    d.kind = "cpu";
    d.name = "duplicate cpu";
    d.vendor = "mlhost tests";
    d.torch_device = "cpu";
    d.memory_unified = true;
    d.compute_units = 1;
    d.logical_units = 1;
    d.recommended_threads = 1;
    d.precisions = MLH_PRECISION_FP32;
    d.fast_precisions = MLH_PRECISION_FP32;
    return {d};
  }
};

MLH_DEVICE_PLUGIN(DuplicateCpuDevices)
