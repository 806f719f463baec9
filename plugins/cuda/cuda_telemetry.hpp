// A telemetry sample of one GPU from NVML.
#pragma once

#include <mlh/plugin.hpp>

#include "cuda_api.hpp"

namespace mlh::cuda {

// GPU utilization (percent of the last sample period with a kernel running), memory used
// and total, temperature (GPU die, Celsius) and board power (watts). A query NVML refuses
// (unsupported on the board, no permission) leaves its field unknown.
TelemetrySample sample_gpu(const NvmlApi& nvml, nvmlDevice_t device);

}  // namespace mlh::cuda
