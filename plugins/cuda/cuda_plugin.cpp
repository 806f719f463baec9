// The CUDA device plugin: NVIDIA GPUs through the driver API and NVML, both opened with
// dlopen when a probe runs, so it loads on machines without a driver. The logic lives in
// the mlhost-cuda-probe library; this file only binds it to the C ABI.
#include <memory>
#include <mlh/plugin.hpp>

#include "cuda_prepare.hpp"
#include "cuda_probe.hpp"
#include "cuda_session.hpp"
#include "cuda_system.hpp"
#include "cuda_telemetry.hpp"

namespace {

using namespace mlh::cuda;

class CudaDevices : public mlh::DevicePlugin {
 public:
  std::vector<mlh::DeviceInfo> probe() override {
    session_.reset();  // NVML shut down before the libraries the environment names now are opened
    session_ = std::make_unique<Session>();
    devices_ = probe_gpus(read_snapshot(*session_));
    return devices_;
  }

  std::vector<mlh::EnvVar> prepare(int32_t device_index, const std::string& plan_json) override {
    const mlh::DeviceInfo& gpu = usable_device(device_index);
    if (gpu.uuid.empty())
      throw mlh::Error(MLH_ERR_UNAVAILABLE, gpu.torch_device +
                                                " has no UUID (cuDeviceGetUuid failed), so it cannot "
                                                "be made the only visible GPU");
    // Only the GPU's own variables: the CPU side of the run (threads, allocator) is the host's.
    return cuda_environment(gpu.uuid, read_cuda_plan(plan_json));
  }

  // The sample is of the whole GPU: NVML's per-process figures use the pids of the
  // driver's namespace, which need not be the worker's.
  mlh::TelemetrySample telemetry(int32_t device_index, int64_t /*pid*/) override {
    const mlh::DeviceInfo& gpu = usable_device(device_index);
    const NvmlApi* nvml = session_->nvml();
    if (!nvml) throw mlh::Error(MLH_ERR_UNSUPPORTED, "no GPU telemetry without NVML: " + session_->nvml_error());
    std::optional<nvmlDevice_t> handle = session_->find_nvml_device(gpu.uuid, gpu.pci_bus_id);
    if (!handle)
      throw mlh::Error(MLH_ERR_UNAVAILABLE, "NVML does not know " + gpu.torch_device + " (" +
                                                (gpu.uuid.empty() ? gpu.pci_bus_id : gpu.uuid) + ")");
    return sample_gpu(*nvml, *handle);
  }

 private:
  // The host may prepare or sample on an instance it never probed.
  const mlh::DeviceInfo& usable_device(int32_t index) {
    if (!session_) probe();
    if (index < 0 || static_cast<size_t>(index) >= devices_.size()) {
      const std::string known =
          devices_.size() == 1 ? "only cuda:0" : "cuda:0 to cuda:" + std::to_string(devices_.size() - 1);
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT,
                       "device index " + std::to_string(index) + " does not exist: the cuda plugin reports " + known);
    }
    const mlh::DeviceInfo& gpu = devices_[static_cast<size_t>(index)];
    if (!gpu.available)
      throw mlh::Error(MLH_ERR_UNAVAILABLE, gpu.torch_device + " is unavailable: " + gpu.unavailable_reason);
    return gpu;
  }

  std::unique_ptr<Session> session_;
  std::vector<mlh::DeviceInfo> devices_;
};

}  // namespace

MLH_DEVICE_PLUGIN(CudaDevices)
