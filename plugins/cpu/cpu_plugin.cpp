// The CPU device plugin: one device, the CPUs this process may use. The logic lives in
// the mlhost-cpu-probe library; this file only binds it to the C ABI.
#include <mlh/plugin.hpp>

#include "cpu_probe.hpp"
#include "cpu_snapshot.hpp"
#include "cpu_telemetry.hpp"

namespace {

class CpuDevices : public mlh::DevicePlugin {
 public:
  std::vector<mlh::DeviceInfo> probe() override { return {mlh::cpu::probe_cpu(mlh::cpu::read_snapshot("/"))}; }

  // No prepare(): a worker's threads and allocator are the CPU side of every run, which the
  // host sets from the plan (host/plan/worker_env.hpp); the CPU has nothing of its own to add.

  mlh::TelemetrySample telemetry(int32_t device_index, int64_t pid) override {
    check_index(device_index);
    return monitor_.sample(pid);
  }

 private:
  static void check_index(int32_t device_index) {
    if (device_index != 0)
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT,
                       "device index " + std::to_string(device_index) + " does not exist: the cpu plugin has only device 0");
  }

  mlh::cpu::ProcessMonitor monitor_;
};

}  // namespace

MLH_DEVICE_PLUGIN(CpuDevices)
