#include "cuda_telemetry.hpp"

namespace mlh::cuda {

TelemetrySample sample_gpu(const NvmlApi& nvml, nvmlDevice_t device) {
  TelemetrySample t;
  nvmlUtilization_t utilization{};
  if (nvml.nvmlDeviceGetUtilizationRates(device, &utilization) == NVML_SUCCESS) t.utilization_percent = utilization.gpu;
  nvmlMemory_t memory{};
  if (nvml.nvmlDeviceGetMemoryInfo(device, &memory) == NVML_SUCCESS) {
    t.memory_used_bytes = static_cast<int64_t>(memory.used);
    t.memory_total_bytes = static_cast<int64_t>(memory.total);
  }
  unsigned int celsius = 0;
  if (nvml.nvmlDeviceGetTemperature(device, NVML_TEMPERATURE_GPU, &celsius) == NVML_SUCCESS)
    t.temperature_celsius = celsius;
  unsigned int milliwatts = 0;
  if (nvml.nvmlDeviceGetPowerUsage(device, &milliwatts) == NVML_SUCCESS) t.power_watts = milliwatts / 1000.0;
  return t;
}

}  // namespace mlh::cuda
