// model.encoder=python through ProtoNet's commands (a fake host, in-memory data): the user's
// PyTorch encoder (examples/pytorch/my_encoder.py) learns the easy set as Conv-4 does, its
// weights are saved under its own state_dict names, a stopped run resumes to the
// uninterrupted run's weights bit for bit, and eval scores it. A module that breaks its
// contract (a wrong output shape) is refused naming the file, the class and the shapes. A
// build without the Python bridge refuses model.encoder=python as bad input.
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <mlh/plugin.hpp>
#include <mlh/runtime/safetensors.hpp>
#include <nlohmann/json.hpp>

#include "blob_runs.hpp"
#include "commands.hpp"
#include "fake_host.hpp"
#include "mlh_test_paths.hpp"
#include "temp_dir.hpp"

namespace {

using nlohmann::json;
using namespace protonet_test;

const std::string kEncoder = std::string(PROTONET_EXAMPLES_DIR) + "/my_encoder.py:SmallConvEncoder";

json python_config() {
  json config = small_config();
  config["model"] = {{"encoder", "python"}, {"module", kEncoder}, {"kwargs", {{"width", 16}}}};
  return config;
}

bool built_with_bridge() { return std::string(PROTONET_PYTHON_BRIDGE) != ""; }

TEST(ProtonetPythonEncoder, LearnsResumesBitForBitAndEvaluates) {
  if (!built_with_bridge()) GTEST_SKIP() << "this build has no Python bridge (ABuildWithoutTheBridgeRefusesIt)";
  json config = python_config();
  config["epochs"] = 2;
  config["episodes_per_epoch"] = 10;
  TempDir whole, stopped;
  WholeAndResumed runs;
  std::string error;
  train_whole_and_resumed(config, 13, whole.str(), stopped.str(), runs, error);  // stopped in the second epoch
  ASSERT_TRUE(error.empty()) << error;
  FakeHost &a = runs.whole, &c = runs.resumed;
  // 4-way validation on easy blobs: chance is 0.25.
  EXPECT_GT(json::parse(a.summary)["best_val_acc"].get<double>(), 0.7) << a.summary;
  const auto wa = mlh::rt::load_safetensors(whole.str() + "/model.safetensors");
  const auto wc = mlh::rt::load_safetensors(stopped.str() + "/model.safetensors");
  EXPECT_EQ(wa.at("body.0.weight").sizes(), (at::IntArrayRef{16, 1, 3, 3}));  // the module's own names
  EXPECT_TRUE(wa.count("body.1.running_mean"));
  ASSERT_EQ(wa.size(), wc.size());
  for (const auto& [name, t] : wa) EXPECT_TRUE(at::equal(t, wc.at(name))) << name;
  EXPECT_EQ(json::parse(a.summary)["best_val_loss"], json::parse(c.summary)["best_val_loss"]);

  FakeHost e;
  ASSERT_EQ(run(e, "eval", config, whole.path(), false, &error), MLH_OK) << error;
  EXPECT_GT(json::parse(e.summary)["accuracy"].get<double>(), 0.5) << e.summary;

  // --init-from the trained weights: the module's own names load, and one Adam step (lr 1e-3)
  // stays next to them, not to a fresh initialisation.
  config["epochs"] = 1;
  config["episodes_per_epoch"] = 1;
  const json warm_plan = {{"torch_device", "cpu"}, {"precision", "fp32"},
                          {"init_from", {{"path", whole.str() + "/model.safetensors"}, {"freeze", json::array()}}}};
  FakeHost w;
  ASSERT_EQ(run(w, "train", config, whole.str() + "/warm", false, &error, warm_plan.dump()), MLH_OK) << error;
  const auto warm = mlh::rt::load_safetensors(whole.str() + "/warm/model.safetensors");
  EXPECT_TRUE(at::allclose(warm.at("body.4.weight"), wa.at("body.4.weight"), 0, 5e-3));
}

TEST(ProtonetPythonEncoder, AnEncoderThatBreaksItsContractIsRefusedNamingItsShapes) {
  if (!built_with_bridge()) GTEST_SKIP() << "this build has no Python bridge (ABuildWithoutTheBridgeRefusesIt)";
  TempDir dir;
  const std::string file = (dir.path() / "unflattened.py").string();
  std::ofstream(file) << "from torch import nn\n\nclass Unflattened(nn.Module):\n"
                         "    def __init__(self, in_channels):\n        super().__init__()\n"
                         "        self.conv = nn.Conv2d(in_channels, 4, 3)\n\n"
                         "    def forward(self, x):\n        return self.conv(x)\n";
  json config = small_config();
  config["model"] = {{"encoder", "python"}, {"module", file + ":Unflattened"}};
  FakeHost host;
  std::string error;
  EXPECT_EQ(run(host, "train", config, (dir.path() / "run").string(), false, &error), MLH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("config field 'model.module': " + file + ":Unflattened: for images [2, 1, 28, 28] forward "
                       "returned [2, 4, 26, 26]: flatten the features"),
            std::string::npos) << error;
}

TEST(ProtonetPythonEncoder, ABuildWithoutTheBridgeRefusesIt) {
  if (built_with_bridge()) GTEST_SKIP() << "this build has the Python bridge (the tests above use it)";
  TempDir dir;
  FakeHost host;
  std::string error;
  EXPECT_EQ(run(host, "train", python_config(), dir.str(), false, &error), MLH_ERR_INVALID_ARGUMENT);
  EXPECT_NE(error.find("SmallConvEncoder: this build's LibTorch has no Python half"), std::string::npos) << error;
}

}  // namespace
