#include "cuda_probe.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "cuda_format.hpp"

namespace mlh::cuda {
namespace {

using nlohmann::json;

constexpr const char* kPermissionDenied = "permission denied opening the NVIDIA device (are you in the video group?)";

json or_null(const std::optional<int>& value) { return value ? json(*value) : json(nullptr); }
json or_null(const std::optional<std::string>& value) { return value ? json(*value) : json(nullptr); }

std::string result_text(const FailedCall& f) {
  return (f.result_name.empty() ? "error" : f.result_name) + " (" + std::to_string(f.result) + ")";
}

std::string hidden_by_visible_devices(const std::string& value) {
  return "CUDA_VISIBLE_DEVICES=\"" + value + "\" hides every GPU";
}

std::string no_gpu(const CudaSnapshot& s) {
  return s.cuda_visible_devices ? hidden_by_visible_devices(*s.cuda_visible_devices) : "no NVIDIA GPU found";
}

// Why CUDA cannot be used at all, or nullopt when the driver enumerated devices.
std::optional<std::string> unusable_reason(const CudaSnapshot& s) {
  if (s.driver_load_error)
    return "no NVIDIA driver: " + s.driver_library + " could not be loaded (" + *s.driver_load_error + ")";
  const std::optional<FailedCall>& failed = s.init_failure;
  if (failed && (failed->result == CUDA_ERROR_NOT_PERMITTED || s.nvml_init_result == NVML_ERROR_NO_PERMISSION))
    return std::string(kPermissionDenied);
  // cuDriverGetVersion works before cuInit, so an old driver is named even when cuInit
  // refuses to start.
  if (s.driver_version && *s.driver_version < kMinimumCudaVersion)
    return "NVIDIA driver too old: supports CUDA " + cuda_version_text(*s.driver_version) + ", need " +
           cuda_version_text(kMinimumCudaVersion);
  if (failed) {
    switch (failed->result) {
      case CUDA_ERROR_NO_DEVICE:
        return no_gpu(s);
      case CUDA_ERROR_STUB_LIBRARY:
        return "no NVIDIA driver: " + s.driver_library + " is the CUDA toolkit's stub library, not the driver's";
      case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
        return "NVIDIA driver mismatch: " + s.driver_library +
               " and the loaded kernel module are different versions (reboot after a driver update?)";
      default:
        return failed->call + " failed: " + result_text(*failed);
    }
  }
  if (s.gpus.empty()) return no_gpu(s);
  return std::nullopt;
}

std::string nvml_status(const CudaSnapshot& s) { return s.nvml_error.value_or("ok"); }

// Facts for reports that every record of a probe shares.
json common_details(const CudaSnapshot& s) {
  return {{"gpu_count", s.gpus.size()},
          {"cuda_driver_version", or_null(s.driver_version)},
          {"driver_library", s.driver_library},
          {"nvml_library", s.nvml_library},
          {"nvml", nvml_status(s)},
          {"cuda_visible_devices", or_null(s.cuda_visible_devices)}};
}

DeviceInfo unnamed_gpu(int index) {
  DeviceInfo d;
  d.kind = "cuda";
  d.index = index;
  d.device_class = MLH_DEVICE_CLASS_DISCRETE_GPU;
  d.name = "NVIDIA GPU";
  d.vendor = "NVIDIA";
  d.torch_device = "cuda:" + std::to_string(index);
  d.precisions = 0;  // an unusable device runs nothing
  return d;
}

DeviceInfo unavailable(int index, const std::string& reason, json details) {
  DeviceInfo d = unnamed_gpu(index);
  d.available = false;
  d.unavailable_reason = reason;
  d.details_json = details.dump();
  return d;
}

std::string features_for(int major, int minor) {
  std::string features = "sm_" + std::to_string(major) + std::to_string(minor);
  if (major >= 7) features += ",tensor_cores";
  return features;
}

DeviceInfo gpu_record(const CudaSnapshot& s, int index) {
  const GpuFacts& g = s.gpus[static_cast<size_t>(index)];
  json details = common_details(s);
  if (g.failure)
    return unavailable(index, "cuDeviceGet(" + std::to_string(index) + ") failed: " + result_text(*g.failure), details);
  DeviceInfo d = unnamed_gpu(index);
  const bool integrated = g.integrated.value_or(0) != 0;
  if (integrated) d.device_class = MLH_DEVICE_CLASS_UNIFIED_GPU;  // Jetson/DRIVE: one memory with the CPU
  d.memory_unified = integrated;
  if (g.name && !g.name->empty()) d.name = *g.name;
  if (g.uuid) d.uuid = format_uuid(*g.uuid);
  if (g.pci_domain && g.pci_bus && g.pci_device)
    d.pci_bus_id = format_pci_bus_id(*g.pci_domain, *g.pci_bus, *g.pci_device);
  if (g.capability_major && g.capability_minor) {
    d.capability_major = *g.capability_major;
    d.capability_minor = *g.capability_minor;
    d.features = features_for(d.capability_major, d.capability_minor);
  }
  if (g.multiprocessors) d.compute_units = *g.multiprocessors;
  if (g.memory_total_bytes) d.memory_total_bytes = *g.memory_total_bytes;
  // NVML's total includes memory the driver reserves for itself, so its free figure can
  // exceed the total that the driver API (and LibTorch) report.
  if (g.memory_free_bytes)
    d.memory_free_bytes =
        g.memory_total_bytes ? std::min(*g.memory_free_bytes, *g.memory_total_bytes) : *g.memory_free_bytes;
  if (s.driver_version) d.runtime_version = cuda_version_text(*s.driver_version);
  // NVML knows the driver's own version ("550.54.15"); the driver API only the CUDA version.
  if (s.nvml_driver_version)
    d.driver_version = *s.nvml_driver_version;
  else if (s.driver_version)
    d.driver_version = "CUDA " + cuda_version_text(*s.driver_version);
  const int major = d.capability_major == MLH_UNKNOWN ? 0 : d.capability_major;
  const int minor = d.capability_minor == MLH_UNKNOWN ? 0 : d.capability_minor;
  d.precisions = precisions_for(major, minor);
  d.fast_precisions = fast_precisions_for(major, minor);

  details["integrated"] = integrated;
  details["pci_domain_id"] = or_null(g.pci_domain);
  details["pci_bus"] = or_null(g.pci_bus);
  details["pci_device"] = or_null(g.pci_device);
  details["nvml_matched_by"] = g.nvml_matched_by.empty() ? json(nullptr) : json(g.nvml_matched_by);
  d.details_json = details.dump();
  return d;
}

}  // namespace

uint32_t precisions_for(int major, int minor) {
  uint32_t p = MLH_PRECISION_FP32 | MLH_PRECISION_FP64 | MLH_PRECISION_FP16;
  if (major * 10 + minor >= 80) p |= MLH_PRECISION_BF16 | MLH_PRECISION_TF32;
  return p;
}

uint32_t fast_precisions_for(int major, int minor) {
  uint32_t p = MLH_PRECISION_FP32;
  if (major >= 7) p |= MLH_PRECISION_FP16;
  if (major >= 8) p |= MLH_PRECISION_BF16 | MLH_PRECISION_TF32;
  if (minor == 0 && major >= 6 && major <= 10) p |= MLH_PRECISION_FP64;
  return p;
}

std::vector<DeviceInfo> probe_gpus(const CudaSnapshot& s) {
  if (std::optional<std::string> reason = unusable_reason(s)) {
    json details = common_details(s);
    if (s.init_failure) {
      details["failed_call"] = s.init_failure->call;
      details["result"] = s.init_failure->result;
      details["result_name"] = s.init_failure->result_name;
    }
    return {unavailable(0, *reason, details)};
  }
  std::vector<DeviceInfo> records;
  for (size_t i = 0; i < s.gpus.size(); ++i) records.push_back(gpu_record(s, static_cast<int>(i)));
  return records;
}

}  // namespace mlh::cuda
