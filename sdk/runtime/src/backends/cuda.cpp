// NVIDIA GPUs: the caching allocator (statistics, peak, cache, the plan's memory fraction),
// cuBLAS's determinism, CUDA graphs, and the default generator of every GPU. In a LibTorch
// without CUDA a CUDA device never reaches a run (apply_plan refuses it); this backend then
// only says why graphs are off.
#include "backend.hpp"

#include <cstdlib>
#include <stdexcept>

#include "mlh/runtime/compat.hpp"

#if MLH_TORCH_HAS_CUDA
#include <ATen/Context.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/cuda.h>
#endif

namespace mlh::rt::backends {
namespace {

#if MLH_TORCH_HAS_CUDA
c10::DeviceIndex cuda_index(at::Device device) {
  return device.has_index() ? device.index() : c10::cuda::current_device();
}

class CudaGraphRecorder : public GraphRecorder {
 public:
  explicit CudaGraphRecorder(c10::Device device) : device_(device) {}

  void capture(const std::function<void()>& body) override {
    graph_ = std::make_unique<at::cuda::CUDAGraph>();
    c10::cuda::CUDAGuard on_device(device_);
    // The warm-up's work must be done before capture starts; a capture on the default stream
    // is refused, so it runs on a side stream, which the replays need not use.
    c10::cuda::device_synchronize();
    c10::cuda::CUDAStreamGuard side(c10::cuda::getStreamFromPool(false, device_.index()));
    graph_->capture_begin();
    try {
      body();
    } catch (...) {
      try {
        graph_->capture_end();  // ends the (invalidated) capture so that the stream works again
      } catch (...) {
      }
      graph_.reset();
      throw;
    }
    graph_->capture_end();
  }

  void replay() override {
    if (!graph_) throw std::logic_error("CUDA graph replayed before it was captured");
    c10::cuda::CUDAGuard on_device(device_);
    graph_->replay();
  }

 private:
  c10::Device device_;
  std::unique_ptr<at::cuda::CUDAGraph> graph_;
};


class CudaBackend : public Backend {
 public:
  void synchronize(at::Device device) const override { torch::cuda::synchronize(cuda_index(device)); }

  MemoryStats allocator_stats(at::Device device) const override {
    const auto cuda = c10::cuda::CUDACachingAllocator::getDeviceStats(cuda_index(device));
    // Index 0 is StatType::AGGREGATE (all pool sizes) in every LibTorch version.
    MemoryStats stats;
    stats.allocated = cuda.allocated_bytes[0].current;
    stats.reserved = cuda.reserved_bytes[0].current;
    stats.peak = cuda.allocated_bytes[0].peak;
    stats.peak_reserved = cuda.reserved_bytes[0].peak;
    return stats;
  }

  std::optional<DeviceMemory> memory(at::Device device) const override {
    c10::cuda::CUDAGuard guard(cuda_index(device));
    size_t free = 0, total = 0;
    C10_CUDA_CHECK(cudaMemGetInfo(&free, &total));
    if (total == 0) return std::nullopt;
    return DeviceMemory{static_cast<int64_t>(free), static_cast<int64_t>(total)};
  }

  void reset_peak(at::Device device) const override {
    c10::cuda::CUDACachingAllocator::resetPeakStats(cuda_index(device));
  }

  bool empty_cache(at::Device) const override {
    c10::cuda::CUDACachingAllocator::emptyCache();
    return true;
  }

  const char* cap_caching_allocator(at::Device device, double fraction) const override {
    const c10::DeviceIndex index = cuda_index(device);
    // LibTorch 2.x sets up the caching allocator lazily, at the first CUDA tensor, and refuses a
    // fraction before that ("Allocator not initialized for device"): an empty tensor makes it.
    at::empty({0}, at::TensorOptions().device(c10::Device(c10::DeviceType::CUDA, index)));
    c10::cuda::CUDACachingAllocator::setMemoryFraction(fraction, index);
    return "cuda_caching_allocator";
  }

  // cuBLAS reads it when it creates its first handle, which has not happened yet at this point.
  void prepare_deterministic() const override { setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0); }

  std::vector<at::Generator> generators() const override {
    std::vector<at::Generator> all;
    // device_count() is size_t in 1.13 and c10::DeviceIndex (int8_t) in 2.x.
    for (int i = 0; i < static_cast<int>(torch::cuda::device_count()); ++i)
      all.push_back(at::globalContext().defaultGenerator(c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(i))));
    return all;
  }

  std::unique_ptr<GraphRecorder> graph_recorder(at::Device device, std::string*) const override {
    return std::make_unique<CudaGraphRecorder>(device);
  }
};
#else
// The runtime was compiled without CUDA's headers: even a LibTorch that has CUDA (its Python
// half loaded libtorch_cuda) cannot run this runtime's CUDA paths.
class CudaBackend : public Backend {
 public:
  bool available(at::Device) const override { return false; }
  std::unique_ptr<GraphRecorder> graph_recorder(at::Device, std::string* why_not) const override {
    if (why_not) *why_not = "this LibTorch was built without CUDA";
    return nullptr;
  }
};
#endif

}  // namespace

const Backend& cuda_backend() {
  static const CudaBackend backend;
  return backend;
}

}  // namespace mlh::rt::backends
