#include "cuda_api.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <utility>

namespace mlh::cuda {
namespace {

std::string env_or(const char* variable, const char* fallback) {
  const char* value = std::getenv(variable);
  return value && *value ? value : fallback;
}

// Resolves `name` into `slot`; false when the library does not export it.
template <class F>
bool resolve(const SharedLibrary& library, const char* name, F*& slot) {
  slot = reinterpret_cast<F*>(library.symbol(name));
  return slot != nullptr;
}

// Like resolve, for a symbol the plugin cannot do without: the first one missing is the
// library's `error`.
template <class F>
void require(const SharedLibrary& library, const char* name, F*& slot, std::string& error) {
  if (error.empty() && !resolve(library, name, slot)) error = std::string("no symbol ") + name;
}

}  // namespace

SharedLibrary::SharedLibrary(SharedLibrary&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}

SharedLibrary& SharedLibrary::operator=(SharedLibrary&& other) noexcept {
  if (this != &other) {
    if (handle_) ::dlclose(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
  }
  return *this;
}

SharedLibrary::~SharedLibrary() {
  if (handle_) ::dlclose(handle_);
}

SharedLibrary SharedLibrary::open(const std::string& name, std::string& error) {
  // RTLD_NODELETE: the driver keeps process-wide state once cuInit has run (there is no
  // cuInit counterpart), so it must stay mapped; dlclose then only drops our reference.
  void* handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!handle) {
    const char* text = ::dlerror();
    error = text ? text : "dlopen failed";
  }
  return SharedLibrary(handle);
}

void* SharedLibrary::symbol(const char* name) const { return handle_ ? ::dlsym(handle_, name) : nullptr; }

std::string driver_library_name() { return env_or("MLH_CUDA_DRIVER_LIBRARY", "libcuda.so.1"); }
std::string nvml_library_name() { return env_or("MLH_NVML_LIBRARY", "libnvidia-ml.so.1"); }

LoadedDriver load_driver(const std::string& name) {
  LoadedDriver d;
  d.library = SharedLibrary::open(name, d.error);
  if (!d.library.is_open()) return d;
  DriverApi& a = d.api;
  require(d.library, "cuInit", a.cuInit, d.error);
  require(d.library, "cuDriverGetVersion", a.cuDriverGetVersion, d.error);
  require(d.library, "cuDeviceGetCount", a.cuDeviceGetCount, d.error);
  require(d.library, "cuDeviceGet", a.cuDeviceGet, d.error);
  require(d.library, "cuDeviceGetName", a.cuDeviceGetName, d.error);
  if (!resolve(d.library, "cuDeviceGetUuid_v2", a.cuDeviceGetUuid))
    require(d.library, "cuDeviceGetUuid", a.cuDeviceGetUuid, d.error);
  require(d.library, "cuDeviceTotalMem_v2", a.cuDeviceTotalMem_v2, d.error);
  require(d.library, "cuDeviceGetAttribute", a.cuDeviceGetAttribute, d.error);
  resolve(d.library, "cuGetErrorName", a.cuGetErrorName);
  return d;
}

LoadedNvml load_nvml(const std::string& name) {
  LoadedNvml n;
  n.library = SharedLibrary::open(name, n.error);
  if (!n.library.is_open()) return n;
  NvmlApi& a = n.api;
  require(n.library, "nvmlInit_v2", a.nvmlInit_v2, n.error);
  require(n.library, "nvmlShutdown", a.nvmlShutdown, n.error);
  require(n.library, "nvmlErrorString", a.nvmlErrorString, n.error);
  require(n.library, "nvmlSystemGetDriverVersion", a.nvmlSystemGetDriverVersion, n.error);
  require(n.library, "nvmlDeviceGetHandleByUUID", a.nvmlDeviceGetHandleByUUID, n.error);
  require(n.library, "nvmlDeviceGetHandleByPciBusId_v2", a.nvmlDeviceGetHandleByPciBusId_v2, n.error);
  require(n.library, "nvmlDeviceGetMemoryInfo", a.nvmlDeviceGetMemoryInfo, n.error);
  require(n.library, "nvmlDeviceGetUtilizationRates", a.nvmlDeviceGetUtilizationRates, n.error);
  require(n.library, "nvmlDeviceGetTemperature", a.nvmlDeviceGetTemperature, n.error);
  require(n.library, "nvmlDeviceGetPowerUsage", a.nvmlDeviceGetPowerUsage, n.error);
  return n;
}

}  // namespace mlh::cuda
