// The MPS device plugin: one device, the Apple GPU that LibTorch reaches as "mps". It
// loads everywhere and says why MPS is unusable off Apple Silicon. The logic lives in the
// mlhost-mps-probe library; this file only binds it to the C ABI.
#include <mlh/plugin.hpp>

#include "mps_prepare.hpp"
#include "mps_probe.hpp"
#include "mps_snapshot.hpp"
#include "mps_telemetry.hpp"

namespace {

class MpsDevices : public mlh::DevicePlugin {
 public:
  std::vector<mlh::DeviceInfo> probe() override { return {mlh::mps::probe_mps(live_snapshot())}; }

  // Prepare does not require an available device: the environment is harmless elsewhere,
  // and the host decides what to run where.
  std::vector<mlh::EnvVar> prepare(int32_t device_index, const std::string& plan_json) override {
    check_index(device_index);
    // Only MPS's own variables: the CPU side of the run (threads, allocator) is the host's.
    return mlh::mps::mps_environment(plan_json);
  }

  mlh::TelemetrySample telemetry(int32_t device_index, int64_t pid) override {
    check_index(device_index);
    mlh::TelemetrySample sample;
    sample.memory_used_bytes = mlh::mps::process_footprint_bytes(pid);
    sample.memory_total_bytes = live_snapshot().memsize;
    return sample;
  }

 private:
  static mlh::mps::MacSnapshot live_snapshot() {
    return mlh::mps::snapshot_from_values(mlh::mps::read_live_values());
  }

  static void check_index(int32_t device_index) {
    if (device_index != 0)
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "device index " + std::to_string(device_index) +
                                                     " does not exist: the mps plugin has only device 0");
  }
};

}  // namespace

MLH_DEVICE_PLUGIN(MpsDevices)
