#include "cuda_session.hpp"

namespace mlh::cuda {

Session::Session()
    : driver_name_(driver_library_name()),
      nvml_name_(nvml_library_name()),
      driver_(load_driver(driver_name_)),
      nvml_(load_nvml(nvml_name_)) {
  if (!nvml_.error.empty()) {
    nvml_error_ = nvml_name_ + " could not be loaded (" + nvml_.error + ")";
    return;
  }
  nvml_init_result_ = nvml_.api.nvmlInit_v2();
  nvml_ready_ = *nvml_init_result_ == NVML_SUCCESS;
  if (!nvml_ready_) nvml_error_ = "nvmlInit_v2 failed: " + nvml_result_text(*nvml_init_result_);
}

Session::~Session() {
  if (nvml_ready_) nvml_.api.nvmlShutdown();
}

std::string Session::nvml_result_text(nvmlReturn_t result) const {
  const char* text = nvml_.api.nvmlErrorString ? nvml_.api.nvmlErrorString(result) : nullptr;
  return std::string(text ? text : "error") + " (" + std::to_string(result) + ")";
}

std::optional<nvmlDevice_t> Session::find_nvml_device(const std::string& uuid, const std::string& pci_bus_id,
                                                      std::string* matched_by) const {
  if (!nvml_ready_) return std::nullopt;
  nvmlDevice_t device = nullptr;
  // The UUID first: it names one GPU however the buses are numbered.
  if (!uuid.empty() && nvml_.api.nvmlDeviceGetHandleByUUID(uuid.c_str(), &device) == NVML_SUCCESS) {
    if (matched_by) *matched_by = "uuid";
    return device;
  }
  if (!pci_bus_id.empty() && nvml_.api.nvmlDeviceGetHandleByPciBusId_v2(pci_bus_id.c_str(), &device) == NVML_SUCCESS) {
    if (matched_by) *matched_by = "pci_bus_id";
    return device;
  }
  return std::nullopt;
}

}  // namespace mlh::cuda
