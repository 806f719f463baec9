// slow-good ("slowgood"): a correct device plugin whose probe takes 300 ms, then reports one
// CPU-class device. For testing that probe timeouts are per plugin and probes run in parallel.
#include <mlh/plugin.hpp>

#include <chrono>
#include <thread>

class SlowGoodDevices : public mlh::DevicePlugin {
 public:
  std::vector<mlh::DeviceInfo> probe() override {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    mlh::DeviceInfo d;
    d.device_class = MLH_DEVICE_CLASS_CPU;
    d.kind = "slowgood";
    d.name = "slow good cpu";
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

MLH_DEVICE_PLUGIN(SlowGoodDevices)
