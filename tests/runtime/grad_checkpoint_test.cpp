#include <gtest/gtest.h>

#include <set>

#include <torch/csrc/autograd/function.h>

#include <mlh/runtime/grad_checkpoint.hpp>
#include <mlh/runtime/precision.hpp>

namespace {

using mlh::rt::checkpoint;

// A two-layer perceptron with dropout, so that the recomputation must replay the random mask.
struct Mlp : torch::nn::Module {
  Mlp() {
    at::manual_seed(0);
    w1 = register_parameter("w1", at::randn({16, 8}));
    b1 = register_parameter("b1", at::randn({16}));
    w2 = register_parameter("w2", at::randn({8, 16}));
  }
  at::Tensor forward(const at::Tensor& x) const {
    return at::linear(at::dropout(at::relu(at::linear(x, w1, b1)), 0.5, /*train=*/true), w2);
  }
  std::vector<at::Tensor> grads() const {
    std::vector<at::Tensor> out;
    for (const auto& p : parameters()) out.push_back(p.grad().clone());
    return out;
  }
  at::Tensor w1, b1, w2;
};

struct Result {
  at::Tensor output, input_grad, next_random;
  std::vector<at::Tensor> param_grads;
};

// Runs forward and backward from a fixed seed, through `run`, with fresh gradients.
Result train_step(Mlp& mlp, const std::function<at::Tensor(const at::Tensor&)>& run, bool input_requires_grad = true) {
  mlp.zero_grad();
  at::Tensor x = at::linspace(-1, 1, 4 * 8).reshape({4, 8}).requires_grad_(input_requires_grad);
  at::manual_seed(5);
  Result r;
  r.output = run(x);
  r.output.pow(2).sum().backward();
  r.input_grad = x.grad();
  r.param_grads = mlp.grads();
  r.next_random = at::rand({4});  // the stream the rest of training sees
  return r;
}

void expect_same(const Result& a, const Result& b) {
  EXPECT_TRUE(at::allclose(a.output, b.output));
  ASSERT_EQ(a.input_grad.defined(), b.input_grad.defined());
  if (a.input_grad.defined()) {
    EXPECT_TRUE(at::allclose(a.input_grad, b.input_grad));
  }
  ASSERT_EQ(a.param_grads.size(), b.param_grads.size());
  for (size_t i = 0; i < a.param_grads.size(); ++i) EXPECT_TRUE(at::allclose(a.param_grads[i], b.param_grads[i])) << i;
  EXPECT_TRUE(at::equal(a.next_random, b.next_random));
}

std::set<std::string> graph_node_names(const at::Tensor& t) {
  std::set<std::string> names;
  std::vector<torch::autograd::Node*> stack{t.grad_fn().get()};
  std::set<torch::autograd::Node*> seen;
  while (!stack.empty()) {
    torch::autograd::Node* node = stack.back();
    stack.pop_back();
    if (!node || !seen.insert(node).second) continue;
    names.insert(node->name());
    for (const auto& edge : node->next_edges()) stack.push_back(edge.function.get());
  }
  return names;
}

bool any_contains(const std::set<std::string>& names, const std::string& part) {
  for (const auto& n : names)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

TEST(GradCheckpoint, GradientsEqualThePlainPath) {
  Mlp mlp;
  const auto fn = [&](const at::Tensor& x) { return mlp.forward(x); };
  const Result plain = train_step(mlp, fn);
  const Result checkpointed = train_step(mlp, [&](const at::Tensor& x) { return checkpoint(fn, x); });
  expect_same(plain, checkpointed);
}

TEST(GradCheckpoint, ParametersGetGradientsWhenTheInputNeedsNone) {
  Mlp mlp;
  const auto fn = [&](const at::Tensor& x) { return mlp.forward(x); };
  const Result plain = train_step(mlp, fn, false);
  const Result checkpointed = train_step(mlp, [&](const at::Tensor& x) { return checkpoint(fn, x); }, false);
  EXPECT_FALSE(checkpointed.input_grad.defined());
  expect_same(plain, checkpointed);
}

TEST(GradCheckpoint, KeepsNoActivations) {
  Mlp mlp;
  const auto fn = [&](const at::Tensor& x) { return mlp.forward(x); };
  const at::Tensor x = at::randn({4, 8}).requires_grad_();
  const at::Tensor out = checkpoint(fn, x);
  EXPECT_NE(out.grad_fn()->name().find("CheckpointFunction"), std::string::npos) << out.grad_fn()->name();
  const auto names = graph_node_names(out);
  EXPECT_FALSE(any_contains(names, "Relu"));
  EXPECT_FALSE(any_contains(names, "Addmm"));
  EXPECT_TRUE(any_contains(graph_node_names(fn(x)), "Relu"));  // what the plain path keeps
}

TEST(GradCheckpoint, TwiceInOneGraph) {
  Mlp first, second;
  const auto plain = [&](const at::Tensor& x) { return second.forward(first.forward(x)) + first.forward(x); };
  const auto checkpointed = [&](const at::Tensor& x) {
    auto f = [&](const at::Tensor& t) { return first.forward(t); };
    auto s = [&](const at::Tensor& t) { return second.forward(t); };
    return checkpoint(s, checkpoint(f, x)) + checkpoint(f, x);
  };
  const Result a = train_step(first, plain);
  const std::vector<at::Tensor> second_grads = second.grads();
  second.zero_grad();
  const Result b = train_step(first, checkpointed);
  expect_same(a, b);
  const std::vector<at::Tensor> second_grads_b = second.grads();
  for (size_t i = 0; i < second_grads.size(); ++i) EXPECT_TRUE(at::allclose(second_grads[i], second_grads_b[i]));
}

TEST(GradCheckpoint, RecomputesUnderTheForwardsAutocast) {
  Mlp mlp;
  const auto fn = [&](const at::Tensor& x) { return mlp.forward(x); };
  const auto under_bf16 = [](const std::function<at::Tensor(const at::Tensor&)>& run) {
    return [run](const at::Tensor& x) {
      mlh::rt::AutocastScope autocast(mlh::rt::Precision::kBf16, c10::Device(c10::DeviceType::CPU));
      return run(x);
    };  // backward runs after the scope has ended
  };
  const Result plain = train_step(mlp, under_bf16(fn));
  EXPECT_EQ(plain.output.scalar_type(), at::kBFloat16);
  const Result checkpointed = train_step(mlp, under_bf16([&](const at::Tensor& x) { return checkpoint(fn, x); }));
  expect_same(plain, checkpointed);
}

TEST(GradCheckpoint, SeveralInputsAndOutputs) {
  const at::Tensor a = at::randn({3}).requires_grad_();
  const at::Tensor b = at::randn({3}).requires_grad_();
  const auto fn = [](const std::vector<at::Tensor>& in) {
    return std::vector<at::Tensor>{in[0] * in[1], in[0].sin()};
  };
  const auto outs = checkpoint(fn, std::vector<at::Tensor>{a, b});
  ASSERT_EQ(outs.size(), 2u);
  (outs[0].sum() + outs[1].sum()).backward();
  EXPECT_TRUE(at::allclose(a.grad(), b + a.cos()));
  EXPECT_TRUE(at::allclose(b.grad(), a));
}

TEST(GradCheckpoint, DisabledOrWithoutGradIsAPlainCall) {
  Mlp mlp;
  const auto fn = [&](const at::Tensor& x) { return mlp.forward(x); };
  const at::Tensor x = at::randn({4, 8});
  EXPECT_EQ(mlh::rt::maybe_checkpoint(false, fn, x).grad_fn()->name().find("CheckpointFunction"), std::string::npos);
  EXPECT_NE(mlh::rt::maybe_checkpoint(true, fn, x).grad_fn()->name().find("CheckpointFunction"), std::string::npos);
  at::NoGradGuard no_grad;
  EXPECT_FALSE(checkpoint(fn, x).requires_grad());
}

}  // namespace
