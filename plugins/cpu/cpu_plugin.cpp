// The CPU device plugin: one device, the CPUs this process may use. The logic lives in
// the mlhost-cpu-probe library; this file only binds it to the C ABI.
#include <cstdlib>
#include <sstream>
#include <string>

#include <mlh/plugin.hpp>

#include "cpu_probe.hpp"
#include "cpu_snapshot.hpp"
#include "cpu_telemetry.hpp"

namespace {

// `cpuinfo` with `extra` appended to every processor's flags line.
std::string with_flags(const std::string& cpuinfo, const std::string& extra) {
  std::istringstream in(cpuinfo);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) line += " " + extra;
    out += line + "\n";
  }
  return out;
}

class CpuDevices : public mlh::DevicePlugin {
 public:
  std::vector<mlh::DeviceInfo> probe() override {
    mlh::cpu::SystemSnapshot snapshot = mlh::cpu::read_snapshot("/");
    // MLH_CPU_EXTRA_FLAGS ("avx512_fp16 amx_bf16 ..."): flags read as if /proc/cpuinfo listed
    // them, to see how the host plans and the test suite runs for a CPU with more features
    // than this one (docs/testing.md). LibTorch still runs on the CPU there is.
    if (const char* extra = std::getenv("MLH_CPU_EXTRA_FLAGS"); extra && *extra && snapshot.cpuinfo)
      snapshot.cpuinfo = with_flags(*snapshot.cpuinfo, extra);
    return {mlh::cpu::probe_cpu(snapshot)};
  }

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
