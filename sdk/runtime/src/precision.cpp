#include "mlh/runtime/precision.hpp"

#include "mlh/device_traits.hpp"
#include "mlh/plugin.hpp"
#include "mlh/runtime/compat.hpp"
#include "mlh/runtime/plan_effects.hpp"

namespace mlh::rt {

Precision parse_precision(const std::string& text) {
  if (text == "fp32") return Precision::kFp32;
  if (text == "fp16") return Precision::kFp16;
  if (text == "bf16") return Precision::kBf16;
  throw Error(MLH_ERR_INVALID_ARGUMENT, "precision: expected fp32, fp16 or bf16, got \"" + text + "\"");
}

std::string to_string(Precision precision) {
  switch (precision) {
    case Precision::kFp16: return "fp16";
    case Precision::kBf16: return "bf16";
    case Precision::kFp32: break;
  }
  return "fp32";
}

c10::ScalarType scalar_type(Precision precision) {
  switch (precision) {
    case Precision::kFp16: return c10::ScalarType::Half;
    case Precision::kBf16: return c10::ScalarType::BFloat16;
    case Precision::kFp32: break;
  }
  return c10::ScalarType::Float;
}

AutocastScope::AutocastScope(Precision precision, c10::Device device) : device_type_(device.type()) {
  if (precision == Precision::kFp32) return;
  const DeviceTraits& traits = device_traits(device.str());
  const bool bf16 = precision == Precision::kBf16;
  const bool torch_has_bf16 = MLH_TORCH_VERSION_AT_LEAST(traits.bf16_torch[0], traits.bf16_torch[1]);
  if (bf16 && traits.bf16_autocast && !torch_has_bf16)
    throw Error(MLH_ERR_INVALID_ARGUMENT, "autocast: bf16 on " + device.str() + " needs LibTorch " +
                                              std::to_string(traits.bf16_torch[0]) + "." +
                                              std::to_string(traits.bf16_torch[1]) + " or later (this is " +
                                              TORCH_VERSION + ")");
  if (bf16 ? !traits.bf16_autocast : !traits.fp16_autocast) {
    const char* runs = traits.fp16_autocast ? (traits.bf16_autocast ? "fp16 and bf16" : "fp16 only")
                       : traits.bf16_autocast ? "bf16 only"
                                              : "no reduced precision";
    throw Error(MLH_ERR_INVALID_ARGUMENT, "autocast: " + to_string(precision) + " is not supported on " + device.str() +
                                              " (its autocast runs " + runs + ")");
  }
  count_plan_effect("precision", precision == Precision::kBf16 ? "bf16_autocast_regions" : "fp16_autocast_regions");
  previous_enabled_ = compat::autocast_enabled(device_type_);
  previous_dtype_ = compat::autocast_dtype(device_type_);
  compat::set_autocast_enabled(device_type_, true);
  compat::set_autocast_dtype(device_type_, scalar_type(precision));
  at::autocast::increment_nesting();
  active_ = true;
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  compat::set_autocast_enabled(device_type_, previous_enabled_);
  compat::set_autocast_dtype(device_type_, previous_dtype_);
}

}  // namespace mlh::rt
