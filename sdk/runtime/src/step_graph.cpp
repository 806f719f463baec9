#include "mlh/runtime/step_graph.hpp"

#include <stdexcept>
#include <utility>

#include "backends/backend.hpp"
#include "mlh/runtime/plan_effects.hpp"

namespace mlh::rt {

std::unique_ptr<GraphRecorder> cuda_graph_recorder(c10::Device device, std::string* why_not) {
  return backends::of(device).graph_recorder(device, why_not);
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
