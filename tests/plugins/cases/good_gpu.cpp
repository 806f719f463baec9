// good-gpu ("fakegpu"): a correct device plugin reporting two discrete GPUs for ranking
// tests. Device 0 is usable: 8 GiB, 40 compute units, and torch_device "cpu" so a run on it
// really works without a GPU. Device 1 is unavailable with a reason.
//
// For the device-choice tests, two variables make device 0 a poor accelerator:
//   MLH_FAKEGPU_CORES       its workers' OpenMP threads all on these cores ("0"): a device
//                           slower than the CPU it ranks above by class
//   MLH_FAKEGPU_TORCH_DEVICE its torch device (e.g. "cuda:0" where there is none): a device
//                           whose workers fail
#include <cstdlib>

#include <mlh/plugin.hpp>

class FakeGpuDevices : public mlh::DevicePlugin {
 public:
  std::vector<mlh::DeviceInfo> probe() override {
    mlh::DeviceInfo d;
    d.device_class = MLH_DEVICE_CLASS_DISCRETE_GPU;
    d.kind = "fakegpu";
    d.vendor = "mlhost tests";
    const char* torch_device = std::getenv("MLH_FAKEGPU_TORCH_DEVICE");
    d.torch_device = torch_device && *torch_device ? torch_device : "cpu";
    d.memory_total_bytes = int64_t{8} << 30;
    d.memory_free_bytes = int64_t{7} << 30;
    d.memory_unified = false;
    d.compute_units = 40;
    d.precisions = MLH_PRECISION_FP32;
    d.fast_precisions = MLH_PRECISION_FP32;
    d.driver_version = "0.0-fake";

    mlh::DeviceInfo gpu0 = d;
    gpu0.index = 0;
    gpu0.name = "Fake GPU 0";
    gpu0.available = true;
    gpu0.uuid = "GPU-fake-0000";

    mlh::DeviceInfo gpu1 = d;
    gpu1.index = 1;
    gpu1.name = "Fake GPU 1";
    gpu1.available = false;
    gpu1.unavailable_reason = "fake device 1 is broken on purpose";
    gpu1.uuid = "GPU-fake-0001";
    return {gpu0, gpu1};
  }

  std::vector<mlh::EnvVar> prepare(int32_t /*device_index*/, const std::string& /*plan_json*/) override {
    const char* cores = std::getenv("MLH_FAKEGPU_CORES");
    if (!cores || !*cores) return {};
    return {{"GOMP_CPU_AFFINITY", cores}};
  }
};

MLH_DEVICE_PLUGIN(FakeGpuDevices)
