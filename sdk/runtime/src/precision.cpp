#include "mlh/runtime/precision.hpp"

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
  const bool supported = device_type_ == c10::DeviceType::CUDA ||
                         (device_type_ == c10::DeviceType::CPU && precision == Precision::kBf16) ||
                         (device_type_ == c10::DeviceType::MPS && precision == Precision::kBf16 &&
                          MLH_TORCH_HAS_MPS_BF16_AUTOCAST);
  if (!supported)
    throw Error(MLH_ERR_INVALID_ARGUMENT,
                "autocast: " + to_string(precision) + " is not supported on " + device.str() +
                    (device_type_ == c10::DeviceType::MPS ? " (MPS: bf16 only, with LibTorch 2.6 or later; this is " +
                                                                std::string(TORCH_VERSION) + ")"
                                                          : ""));
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
