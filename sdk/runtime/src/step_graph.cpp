#include "mlh/runtime/step_graph.hpp"

#include <stdexcept>
#include <utility>

#include "mlh/runtime/compat.hpp"
#include "mlh/runtime/plan_effects.hpp"

#if MLH_TORCH_HAS_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace mlh::rt {

#if MLH_TORCH_HAS_CUDA
namespace {

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

}  // namespace
#endif

std::unique_ptr<GraphRecorder> cuda_graph_recorder(c10::Device device, std::string* why_not) {
  if (!device.is_cuda()) {
    if (why_not) *why_not = "CUDA graphs need a CUDA device (this run's is " + device.str() + ")";
    return nullptr;
  }
#if MLH_TORCH_HAS_CUDA
  return std::make_unique<CudaGraphRecorder>(device);
#else
  if (why_not) *why_not = "this LibTorch was built without CUDA";
  return nullptr;
#endif
}

StepGraph plan_step_graph(bool cuda_graphs, c10::Device device, std::function<void(const std::string&)> log) {
  if (!cuda_graphs) return StepGraph(nullptr, std::move(log));
  std::string why_not;
  StepGraph graph(cuda_graph_recorder(device, &why_not), std::move(log));
  if (!graph.on()) graph.turn_off(why_not);
  return graph;
}

StepGraph::StepGraph(std::unique_ptr<GraphRecorder> recorder, std::function<void(const std::string&)> log,
                     int warmup_steps)
    : recorder_(std::move(recorder)), log_(std::move(log)), warmup_steps_(warmup_steps < 1 ? 1 : warmup_steps) {}

void StepGraph::turn_off(const std::string& why) {
  const bool was_on = recorder_ != nullptr;
  recorder_.reset();
  if (!why_off_.empty()) return;
  why_off_ = why;
  note_plan_effect("cuda_graphs", "off", why);
  if (was_on && log_) log_("CUDA graphs off: " + why + "; the step runs eagerly");
}

bool StepGraph::step(const std::string& key, const std::function<void()>& body, const std::function<void()>& eager) {
  if (!recorder_) {
    eager();
    return false;
  }
  if (!started_ || key != key_) {
    started_ = true;
    key_ = key;
    captured_ = false;
    warmups_left_ = warmup_steps_;
  }
  if (warmups_left_ > 0) {
    --warmups_left_;
    body();
    return false;
  }
  if (!captured_) {
    try {
      recorder_->capture(body);
    } catch (const std::exception& e) {
      // LibTorch's messages carry a stack trace after their first line.
      const std::string what = e.what();
      turn_off("capturing the step failed (" + what.substr(0, what.find('\n')) + ")");
      eager();
      return false;
    }
    captured_ = true;
    ++captures_;
    count_plan_effect("cuda_graphs", "captures");
    if (log_) log_("CUDA graph captured (" + key + "); later steps replay it");
  }
  recorder_->replay();
  ++replays_;
  count_plan_effect("cuda_graphs", "replays");
  return true;
}

}  // namespace mlh::rt
