// Device records the host's unit tests plan for: this machine's kind of CPU.
#pragma once

#include <string>

#include "probe/device.hpp"

namespace mlhost::testing {

// A 2-core, 24 GiB AMD EPYC that runs fp32 and bf16 (fast), as the cpu plugin reports it.
inline Device epyc_cpu() {
  Device d;
  d.plugin = d.kind = "cpu";
  d.name = "AMD EPYC";
  d.torch_device = "cpu";
  d.device_class = MLH_DEVICE_CLASS_CPU;
  d.memory_total_bytes = 24ll << 30;
  d.precisions = MLH_PRECISION_FP32 | MLH_PRECISION_BF16;
  d.fast_precisions = MLH_PRECISION_FP32 | MLH_PRECISION_BF16;
  d.recommended_threads = 2;
  return d;
}

// A CUDA GPU as the cuda plugin reports it: bf16 and TF32 from compute capability 8.0.
inline Device cuda_gpu(const std::string& name, int64_t memory, int cc_major, int cc_minor) {
  Device d;
  d.plugin = d.kind = "cuda";
  d.name = name;
  d.torch_device = "cuda:0";
  d.device_class = MLH_DEVICE_CLASS_DISCRETE_GPU;
  d.available = true;
  d.memory_total_bytes = memory;
  d.capability_major = cc_major;
  d.capability_minor = cc_minor;
  d.precisions = MLH_PRECISION_FP32 | MLH_PRECISION_FP16 | MLH_PRECISION_FP64;
  d.fast_precisions = MLH_PRECISION_FP32 | MLH_PRECISION_FP16;
  if (cc_major >= 8) {
    d.precisions |= MLH_PRECISION_BF16 | MLH_PRECISION_TF32;
    d.fast_precisions |= MLH_PRECISION_BF16 | MLH_PRECISION_TF32;
  }
  return d;
}

// Apple silicon as the mps plugin reports it; `bf16`: macOS 14 or later.
inline Device apple_mps(int64_t memory, bool bf16 = false) {
  Device d;
  d.plugin = d.kind = "mps";
  d.name = "Apple M1";
  d.torch_device = "mps";
  d.device_class = MLH_DEVICE_CLASS_UNIFIED_GPU;
  d.memory_total_bytes = memory;
  d.precisions = MLH_PRECISION_FP32 | MLH_PRECISION_FP16 | (bf16 ? MLH_PRECISION_BF16 : 0u);
  d.fast_precisions = MLH_PRECISION_FP32;
  d.limitations = MLH_LIMIT_NO_DISTRIBUTED | MLH_LIMIT_NO_FP16_AUTOCAST | MLH_LIMIT_NO_GRAPH_COMPILE;
  return d;
}

}  // namespace mlhost::testing
