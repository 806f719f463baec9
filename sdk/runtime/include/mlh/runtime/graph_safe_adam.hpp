// torch::optim::Adam's step with the step count on the device, so that it can run inside a
// captured graph (step_graph.hpp). LibTorch's Adam counts steps on the host and computes its
// bias corrections there: a graph would replay the corrections of the step it captured
// forever. This one keeps the count in a tensor beside the parameters and computes the
// corrections from it, on the same AdamParamState tensors (exp_avg, exp_avg_sq), so the
// optimizer's checkpoint is the same either way: count_host_step() keeps the host counts
// the checkpoint saves in step. Same arithmetic as LibTorch's Adam (weight decay as L2 on the
// gradient); AMSGrad is not supported (the constructor says so).
//
//   GraphSafeAdam adam(optimizer);
//   adam.load_lr();                                // each step, before the graph
//   graph.step(key, [&] { /* forward, backward */ adam.step(); }, eager);
//   adam.count_host_step();
#pragma once

#include <utility>
#include <vector>

#include <torch/optim/adam.h>

namespace mlh::rt {

class GraphSafeAdam {
 public:
  // Creates the state of parameters that have none yet (zero moments, step 0), as Adam's own
  // first step would, and takes the step count from the state. Throws mlh::Error for AMSGrad.
  explicit GraphSafeAdam(torch::optim::Adam& adam);

  // Copies each parameter group's learning rate into the tensor step() reads: call it before
  // each step, outside a captured graph, so that a replay uses the rate of now (a schedule
  // needs no new capture).
  void load_lr();

  // One step over the parameters that have a gradient: device arithmetic only, no host
  // synchronization. The betas, epsilon and weight decay are read now (a graph bakes them
  // in); the learning rate comes from load_lr().
  void step();

  // After each step that ran (eagerly or as a replay): the host-side counts that a
  // checkpoint saves, one more.
  void count_host_step();

 private:
  struct Slot {
    at::Tensor param;
    torch::optim::AdamParamState* state;
    const torch::optim::AdamOptions* options;
    at::Tensor lr;  // double, on the device: its group's (shared by the group's slots)
  };
  torch::optim::Adam& adam_;
  std::vector<Slot> slots_;
  std::vector<std::pair<at::Tensor, const torch::optim::AdamOptions*>> group_lrs_;
  at::Tensor step_;  // double, on the parameters' device
};

}  // namespace mlh::rt
