// The CPU device plugin: one device, the CPUs this process may use. The logic lives in
// the mlhost-cpu-probe library; this file only binds it to the C ABI.
#include <algorithm>

#include <mlh/plugin.hpp>
#include <mlh/worker_env.hpp>

#include "cpu_probe.hpp"
#include "cpu_snapshot.hpp"
#include "cpu_telemetry.hpp"

namespace {

class CpuDevices : public mlh::DevicePlugin {
 public:
  std::vector<mlh::DeviceInfo> probe() override {
    mlh::DeviceInfo cpu = mlh::cpu::probe_cpu(mlh::cpu::read_snapshot("/"));
    recommended_threads_ = cpu.recommended_threads;
    return {cpu};
  }

  std::vector<mlh::EnvVar> prepare(int32_t device_index, const std::string& plan_json) override {
    check_index(device_index);
    // The host may prepare on an instance it never probed.
    if (!recommended_threads_) probe();
    return mlh::worker_cpu_environment(mlh::PlanReader(plan_json), std::max(1, *recommended_threads_));
  }

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

  std::optional<int32_t> recommended_threads_;
  mlh::cpu::ProcessMonitor monitor_;
};

}  // namespace

MLH_DEVICE_PLUGIN(CpuDevices)
