// A training step captured once as a graph and replayed: on a CUDA GPU a small step (a
// ProtoNet episode: a few dozen small kernels) is bound by launching its kernels, and a CUDA
// graph launches them all at once. What the graph bakes in is fixed from then on: the
// addresses of the tensors it reads and writes (so its inputs are copied into static
// tensors before each replay) and every value the host computed while it was captured
// (shapes, the learning rate: the step's `key`; a new key captures again).
//
//   mlh::rt::StepGraph graph = mlh::rt::plan_step_graph(plan.cuda_graphs, plan.device, log);
//   static_images.copy_(episode.images);                  // each step, before the graph
//   graph.step(key, [&] { /* forward, backward, GraphSafeAdam::step() */ },
//              [&] { /* the same step the usual way */ });
//
// The body must not synchronize with the host (no .item(), no host-side branching on tensor
// values) and must leave its results in tensors the caller reads after the step. A capture
// that fails (an operation a graph cannot hold) turns the graph off for the run, logged with
// the reason; the step then runs as `eager`.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include <c10/core/Device.h>

namespace mlh::rt {

// Captures a body and replays it: CUDA graphs on a GPU; tests give a recorder of their own.
class GraphRecorder {
 public:
  virtual ~GraphRecorder() = default;
  // Records `body` without running it (as CUDA's stream capture does); throws where the body
  // cannot be captured. A second capture replaces the first.
  virtual void capture(const std::function<void()>& body) = 0;
  // Runs what was captured.
  virtual void replay() = 0;
};

// The CUDA graph recorder for `device` (at::cuda::CUDAGraph, captured on a side stream), or
// nullptr with the reason in `why_not` where this LibTorch has no CUDA or the device is not
// a CUDA device.
std::unique_ptr<GraphRecorder> cuda_graph_recorder(c10::Device device, std::string* why_not);

class StepGraph;
// The step graph a run's plan asks for: CUDA graphs where `cuda_graphs` (the plan's field)
// is on and `device` can capture; off otherwise, with the reason where the plan asked.
StepGraph plan_step_graph(bool cuda_graphs, c10::Device device, std::function<void(const std::string&)> log);

class StepGraph {
 public:
  // `recorder` null: every step runs eager. `log` hears the captures and the reason a
  // capture failed. `warmup_steps`: steps that run the body eagerly before a capture (the
  // first creates the optimizer state and the gradients the graph then updates in place;
  // cuDNN's benchmark mode picks its algorithms there, outside the graph).
  StepGraph(std::unique_ptr<GraphRecorder> recorder, std::function<void(const std::string&)> log,
            int warmup_steps = 3);

  // One step: the body eagerly while warming up, then captured once and replayed; `eager`
  // where the graph is off. A key other than the last one's drops the graph and warms up
  // again. True where the step ran as a replay.
  bool step(const std::string& key, const std::function<void()>& body, const std::function<void()>& eager);

  void set_log(std::function<void(const std::string&)> log) { log_ = std::move(log); }

  bool on() const { return recorder_ != nullptr; }
  const std::string& why_off() const { return why_off_; }
  int64_t captures() const { return captures_; }
  int64_t replays() const { return replays_; }

  // Turns the graph off for the rest of the run (the step's shape varies, a setting the graph
  // cannot hold, no CUDA device): the first `why` is kept, and logged where the graph was on.
  void turn_off(const std::string& why);

 private:
  std::unique_ptr<GraphRecorder> recorder_;
  std::function<void(const std::string&)> log_;
  int warmup_steps_;
  std::string key_, why_off_;
  int warmups_left_ = 0;
  bool started_ = false, captured_ = false;
  int64_t captures_ = 0, replays_ = 0;
};

}  // namespace mlh::rt
