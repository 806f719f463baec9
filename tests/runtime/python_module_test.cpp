// A network written in Python (mlh/runtime/python_module.hpp): the embedded interpreter
// builds the user's class, its tensors are the C++ module's (a change on one side is seen on
// the other, gradients reach them), train()/eval() reach Python, and every way a user's file
// can be wrong is an invalid-argument error naming the file, the class and the line. A build
// without the bridge (Debian's LibTorch) refuses with what to do instead.
#include <set>
#include <string>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <mlh/plugin.hpp>
#include <mlh/runtime/python_module.hpp>
#include <torch/nn/module.h>

#include "mlh_test_paths.hpp"

namespace {

const std::string kModules = std::string(MLH_RUNTIME_PYTHON_DIR) + "/mlh_test_modules.py";

bool built_with_bridge() { return std::string(MLH_TEST_PYTHON_BRIDGE) != ""; }

std::unique_ptr<mlh::rt::PythonModule> load(const std::string& file, const std::string& cls,
                                            nlohmann::json kwargs = nlohmann::json::object()) {
  mlh::rt::PythonModuleSpec spec = mlh::rt::parse_python_module("model.module", file + ":" + cls);
  spec.kwargs = std::move(kwargs);
  return mlh::rt::load_python_module(spec);
}

// The error load() or `call` throws (MLH_ERR_INVALID_ARGUMENT), or "" when none.
template <class F>
std::string error_of(F&& call) {
  try {
    call();
  } catch (const mlh::Error& e) {
    EXPECT_EQ(e.code(), MLH_ERR_INVALID_ARGUMENT) << e.what();
    return e.what();
  }
  return "";
}

#define REQUIRE_BRIDGE() \
  if (!built_with_bridge()) GTEST_SKIP() << "this build has no Python bridge (ABuildWithoutTheBridgeRefusesClearly covers it)"

TEST(PythonModule, TheModulesTensorsAreTheCppModulesBothWays) {
  REQUIRE_BRIDGE();
  auto module = load(kModules, "Nested", {{"features", 3}});
  torch::nn::Module owner;
  module->share_tensors_with(owner);
  std::set<std::string> parameters, buffers;
  for (const auto& p : owner.named_parameters()) parameters.insert(p.key());
  for (const auto& b : owner.named_buffers()) buffers.insert(b.key());
  EXPECT_EQ(parameters, (std::set<std::string>{"body.0.weight", "body.0.bias", "body.1.weight", "body.1.bias"}));
  EXPECT_EQ(buffers, (std::set<std::string>{"body.1.running_mean", "body.1.running_var", "body.1.num_batches_tracked"}));

  // A change made in C++ is what Python computes with.
  {
    at::NoGradGuard no_grad;
    owner.named_parameters()["body.0.weight"].fill_(0.5);
    owner.named_parameters()["body.0.bias"].zero_();
  }
  module->train(false);
  const at::Tensor x = at::ones({4, 3});
  const at::Tensor y = module->forward({x}).at(0);
  // 0.5 * 3 = 1.5 through a fresh batch norm in eval mode: (1.5 - 0) / sqrt(1 + 1e-5).
  EXPECT_NEAR(y[0][0].item<double>(), 1.5 / std::sqrt(1 + 1e-5), 1e-5);

  // Training in Python moves the buffers C++ holds; the gradient reaches C++'s parameters.
  module->train(true);
  const at::Tensor before = owner.named_buffers()["body.1.num_batches_tracked"].clone();
  at::Tensor out = module->forward({at::randn({8, 3})}).at(0);
  out.pow(2).sum().backward();
  EXPECT_EQ(owner.named_buffers()["body.1.num_batches_tracked"].item<int64_t>(), before.item<int64_t>() + 1);
  const at::Tensor grad = owner.named_parameters()["body.0.weight"].grad();
  ASSERT_TRUE(grad.defined());
  EXPECT_GT(grad.abs().sum().item<double>(), 0);
}

TEST(PythonModule, ATupleComesBackAsTensorsAndTrainModeReachesPython) {
  REQUIRE_BRIDGE();
  auto two = load(kModules, "TwoOutputs");
  const std::vector<at::Tensor> out = two->forward({at::ones({2, 3})});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(at::equal(out[0], at::full({2, 3}, 2.0)));
  EXPECT_TRUE(at::equal(out[1], at::full({2}, 6.0)));

  auto dropout = load(kModules, "DropoutOnly");
  const at::Tensor x = at::ones({1000});
  dropout->train(false);
  EXPECT_TRUE(at::equal(dropout->forward({x}).at(0), x));
  dropout->train(true);
  const double zeros = (dropout->forward({x}).at(0) == 0).sum().item<double>();
  EXPECT_GT(zeros, 350);
  EXPECT_LT(zeros, 650);
}

TEST(PythonModule, EveryWrongFileOrClassNamesTheFileTheClassAndTheLine) {
  REQUIRE_BRIDGE();
  const std::string missing = error_of([] { load(kModules, "Missing"); });
  EXPECT_NE(missing.find(kModules + ":Missing"), std::string::npos) << missing;
  EXPECT_NE(missing.find("has no class Missing"), std::string::npos) << missing;
  EXPECT_NE(missing.find("DropoutOnly, Nested, Raises, ReturnsANumber, TakesNoArguments, TwoOutputs"),
            std::string::npos) << missing;

  const std::string not_module = error_of([] { load(kModules, "NotAModule"); });
  EXPECT_NE(not_module.find("NotAModule is not a torch.nn.Module subclass"), std::string::npos) << not_module;

  const std::string arguments = error_of([] { load(kModules, "TakesNoArguments", {{"in_channels", 1}}); });
  EXPECT_NE(arguments.find("TypeError"), std::string::npos) << arguments;
  EXPECT_NE(arguments.find("in_channels"), std::string::npos) << arguments;

  const std::string syntax_file = std::string(MLH_RUNTIME_PYTHON_DIR) + "/mlh_test_syntax_error.py";
  const std::string syntax = error_of([&] { load(syntax_file, "Broken"); });
  EXPECT_NE(syntax.find(syntax_file + ":Broken"), std::string::npos) << syntax;
  EXPECT_NE(syntax.find("SyntaxError"), std::string::npos) << syntax;
  EXPECT_NE(syntax.find("mlh_test_syntax_error.py, line 5"), std::string::npos) << syntax;

  auto raises = load(kModules, "Raises");
  const std::string raised = error_of([&] { raises->forward({at::ones({1})}); });
  EXPECT_NE(raised.find(kModules + ":Raises: forward raised ValueError: this module refuses its input"),
            std::string::npos) << raised;
  EXPECT_NE(raised.find("mlh_test_modules.py, line 37"), std::string::npos) << raised;

  auto number = load(kModules, "ReturnsANumber");
  const std::string returned = error_of([&] { number->forward({at::ones({1})}); });
  EXPECT_NE(returned.find("forward returned a int, not a tensor or a tuple of tensors"), std::string::npos) << returned;

  EXPECT_NE(error_of([] { mlh::rt::parse_python_module("model.module", kModules); }).find("names no class"),
            std::string::npos);
  EXPECT_NE(error_of([] { mlh::rt::parse_python_module("model.module", "/nowhere/x.py:X"); })
                .find("names a file that does not exist: /nowhere/x.py"),
            std::string::npos);
}

TEST(PythonModule, ABuildWithoutTheBridgeRefusesClearly) {
  if (built_with_bridge()) {
    EXPECT_EQ(mlh::rt::python_modules_unavailable(), "");
    return;
  }
  const std::string why = mlh::rt::python_modules_unavailable();
  EXPECT_NE(why.find("no Python half"), std::string::npos) << why;
  const std::string error = error_of([] { load(kModules, "Nested"); });
  EXPECT_NE(error.find(kModules + ":Nested"), std::string::npos) << error;
  EXPECT_NE(error.find("scripts/build.sh"), std::string::npos) << error;
}

}  // namespace
