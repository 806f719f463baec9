// Device records the host's unit tests plan for: this machine's kind of CPU.
#pragma once

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

}  // namespace mlhost::testing
