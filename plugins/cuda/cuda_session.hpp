// The driver and NVML libraries as one probe found them, kept open for the instance's
// later prepare and telemetry calls.
#pragma once

#include <optional>
#include <string>

#include "cuda_api.hpp"

namespace mlh::cuda {

class Session {
 public:
  // Opens the libraries that MLH_CUDA_DRIVER_LIBRARY / MLH_NVML_LIBRARY name now (so each
  // probe sees the current environment) and initializes NVML. Never throws for a missing
  // or failing library: it records why.
  Session();
  ~Session();  // nvmlShutdown, when nvmlInit_v2 succeeded
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  const std::string& driver_name() const { return driver_name_; }
  const LoadedDriver& driver() const { return driver_; }

  const std::string& nvml_name() const { return nvml_name_; }
  // The NVML entry points once nvmlInit_v2 succeeded; nullptr otherwise, and then
  // nvml_error() says why.
  const NvmlApi* nvml() const { return nvml_ready_ ? &nvml_.api : nullptr; }
  const std::string& nvml_error() const { return nvml_error_; }
  std::optional<nvmlReturn_t> nvml_init_result() const { return nvml_init_result_; }
  // "message (code)" for an NVML result.
  std::string nvml_result_text(nvmlReturn_t result) const;

  // NVML's handle for the device with this UUID ("GPU-..."), else with this PCI bus id
  // (either may be empty); `matched_by` becomes "uuid" or "pci_bus_id". nullopt when NVML
  // is not ready or knows neither.
  std::optional<nvmlDevice_t> find_nvml_device(const std::string& uuid, const std::string& pci_bus_id,
                                               std::string* matched_by = nullptr) const;

 private:
  std::string driver_name_, nvml_name_;
  LoadedDriver driver_;
  LoadedNvml nvml_;
  bool nvml_ready_ = false;
  std::optional<nvmlReturn_t> nvml_init_result_;
  std::string nvml_error_;
};

}  // namespace mlh::cuda
