// Mixed precision: the plan's "precision" and autocast over a scope of the forward pass.
// fp16 needs a GradScaler for the backward pass (grad_scaler.hpp); bf16 does not.
#pragma once

#include <string>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

namespace mlh::rt {

enum class Precision { kFp32, kFp16, kBf16 };

// "fp32", "fp16", "bf16" (the plan's values); anything else is an mlh::Error.
Precision parse_precision(const std::string& text);
std::string to_string(Precision precision);

// The autocast dtype: Half, BFloat16, or Float for fp32.
c10::ScalarType scalar_type(Precision precision);

// Enables autocast for the device's type while in scope, like Python's torch.autocast:
// CUDA fp16/bf16, CPU bf16. fp32 changes nothing. Any other combination (fp16 on the CPU,
// which LibTorch 1.13's CPU autocast does not run; devices without autocast) throws
// mlh::Error. On exit the previous state comes back, and leaving the outermost scope clears
// autocast's cache of casted weights so that they are not kept beyond the forward pass.
class AutocastScope {
 public:
  AutocastScope(Precision precision, c10::Device device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
  c10::DeviceType device_type_ = c10::DeviceType::CPU;
  bool previous_enabled_ = false;
  c10::ScalarType previous_dtype_ = c10::ScalarType::Undefined;
};

}  // namespace mlh::rt
