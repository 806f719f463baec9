// ProtoNet's ResNet-12 encoder (model.encoder resnet12): its shapes, FEAT's tensor names and
// its size, dropout/DropBlock only in training, gradient checkpointing per stage, the config's
// refusals, and the commands with it (training that learns, resume, eval, the exported file).
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <mlh/plugin.hpp>
#include <mlh/runtime/safetensors.hpp>
#include <nlohmann/json.hpp>
#include <torch/utils.h>

#include "blob_runs.hpp"
#include "config.hpp"
#include "encoder.hpp"
#include "resnet12.hpp"
#include "temp_dir.hpp"

namespace {

using nlohmann::json;
using namespace protonet_test;
namespace fs = std::filesystem;

protonet::Config resnet_config(int64_t width, double drop_rate = 0.1) {
  return protonet::parse_config({{"model", {{"encoder", "resnet12"}, {"drop_rate", drop_rate}}}, {"width", width}});
}

TEST(ProtonetResNet12, ShapesForGrayscale28AndRgb84) {
  torch::NoGradGuard no_grad;
  const protonet::Encoder gray = protonet::make_encoder(resnet_config(64), 1);
  const protonet::Encoder rgb = protonet::make_encoder(resnet_config(64), 3);
  gray->eval();
  rgb->eval();
  EXPECT_EQ(gray->name(), "ResNet-12");
  EXPECT_EQ(gray->forward(at::rand({2, 1, 28, 28})).sizes(), (at::IntArrayRef{2, 640}));
  EXPECT_EQ(rgb->forward(at::rand({2, 3, 84, 84})).sizes(), (at::IntArrayRef{2, 640}));
  EXPECT_EQ(gray->embedding_dim(28, 28), 640);
  EXPECT_EQ(rgb->embedding_dim(84, 84), 640);
  protonet::ResNet12 narrow(1, 16, 0.1);
  EXPECT_EQ(narrow->stage_widths(), (std::vector<int64_t>{16, 40, 80, 160}));
  narrow->eval();
  EXPECT_EQ(narrow->forward(at::rand({3, 1, 28, 28})).sizes(), (at::IntArrayRef{3, 160}));
  EXPECT_EQ(narrow->forward(at::rand({1, 1, 40, 56})).sizes(), (at::IntArrayRef{1, 160})) << "any image size";
}

// FEAT's encoder's state dict, tensor for tensor: its weights load with --init-from.
TEST(ProtonetResNet12, TensorNamesAndShapesAreFeats) {
  protonet::ResNet12 net(3, 64, 0.1);
  std::set<std::string> expected;
  const char* norms[] = {"bn1", "bn2", "bn3", "downsample.1"};
  const char* bn_tensors[] = {"weight", "bias", "running_mean", "running_var", "num_batches_tracked"};
  for (int i = 1; i <= 4; ++i) {
    const std::string layer = "layer" + std::to_string(i) + ".0.";
    for (const char* conv : {"conv1", "conv2", "conv3", "downsample.0"}) expected.insert(layer + conv + ".weight");
    for (const char* bn : norms)
      for (const char* t : bn_tensors) expected.insert(layer + bn + "." + t);
  }
  std::set<std::string> names;
  for (const auto& p : net->named_parameters()) names.insert(p.key());
  for (const auto& b : net->named_buffers()) names.insert(b.key());
  EXPECT_EQ(names, expected);
  const auto params = net->named_parameters();
  EXPECT_EQ(params["layer1.0.conv1.weight"].sizes(), (at::IntArrayRef{64, 3, 3, 3}));
  EXPECT_EQ(params["layer2.0.conv2.weight"].sizes(), (at::IntArrayRef{160, 160, 3, 3}));
  EXPECT_EQ(params["layer3.0.downsample.0.weight"].sizes(), (at::IntArrayRef{320, 160, 1, 1}));
  EXPECT_EQ(params["layer4.0.downsample.1.weight"].sizes(), (at::IntArrayRef{640}));
  // Per stage (in -> out channels): 9 x (in x out + 2 x out x out) + in x out + 4 x 2 x out,
  // i.e. 76,160 + 564,480 + 2,357,760 + 9,425,920 on RGB input.
  EXPECT_EQ(net->parameter_count(), 12424320);
  EXPECT_EQ(protonet::ResNet12(1, 64, 0.1)->parameter_count(), 12424320 - 2 * (9 * 64 + 64));
}

TEST(ProtonetResNet12, DropoutAndDropBlockOnlyInTraining) {
  at::manual_seed(3);
  protonet::ResNet12 net(1, 8, 0.3);
  const at::Tensor x = at::rand({4, 1, 28, 28});
  {
    torch::NoGradGuard no_grad;
    net->eval();
    EXPECT_TRUE(at::equal(net->forward(x), net->forward(x))) << "eval is deterministic";
    net->train();
    EXPECT_FALSE(at::allclose(net->forward(x), net->forward(x))) << "training drops";
    protonet::ResNet12 none(1, 8, 0.0);
    none->train();
    EXPECT_TRUE(at::equal(none->forward(x), none->forward(x))) << "drop_rate 0 drops nothing";
  }
  // DropBlock zeroes whole 5x5 squares (each seed's, so at least 25 values at a time),
  // about `rate` of the map, and scales the rest up to keep the mean.
  const at::Tensor ones = at::ones({64, 8, 10, 10});
  const at::Tensor y = protonet::drop_block(ones, 0.2, 5);
  const double dropped = (y == 0).to(at::kFloat).mean().item<double>();
  EXPECT_GT(dropped, 0.1);
  EXPECT_LT(dropped, 0.3);
  EXPECT_NEAR(y.mean().item<double>(), 1.0, 1e-4);
  const at::Tensor zeros_per_map = (y == 0).sum({2, 3});
  const at::Tensor touched = zeros_per_map.masked_select(zeros_per_map > 0);
  ASSERT_GT(touched.numel(), 0);
  EXPECT_GE(touched.min().item<int64_t>(), 25) << "a map with a dropped value lost a whole block";
  EXPECT_TRUE(at::equal(protonet::drop_block(ones, 0.0, 5), ones));
  EXPECT_EQ(protonet::drop_block(at::ones({2, 3, 3, 3}), 0.1, 5).sizes(), (at::IntArrayRef{2, 3, 3, 3}))
      << "the block shrinks to a smaller map";
}

// One step with and one without gradient checkpointing, from the same weights and random
// state, give the same gradients and batch-norm statistics (the masks drawn the same).
TEST(ProtonetResNet12, CheckpointedStepEqualsPlainStep) {
  at::manual_seed(5);
  protonet::ResNet12 plain(1, 8, 0.1), checkpointed(1, 8, 0.1);
  {
    torch::NoGradGuard no_grad;
    auto a = plain->named_parameters(), b = checkpointed->named_parameters();
    for (auto& item : a) b[item.key()].copy_(item.value());
  }
  const at::Tensor x = at::rand({6, 1, 28, 28});
  at::manual_seed(9);
  plain->forward(x, false).pow(2).sum().backward();
  at::manual_seed(9);
  checkpointed->forward(x, true).pow(2).sum().backward();
  auto a = plain->named_parameters(), b = checkpointed->named_parameters();
  for (auto& item : a) {
    ASSERT_TRUE(b[item.key()].grad().defined()) << item.key();
    EXPECT_TRUE(at::allclose(item.value().grad(), b[item.key()].grad(), 1e-4, 1e-6)) << item.key();
  }
  auto ab = plain->named_buffers(), bb = checkpointed->named_buffers();
  for (auto& item : ab) EXPECT_TRUE(at::allclose(item.value(), bb[item.key()], 1e-5, 1e-7)) << item.key();
  EXPECT_EQ(bb["layer1.0.bn1.num_batches_tracked"].item<int64_t>(), 1) << "counted once, not per recomputation";
}

TEST(ProtonetResNet12, TheConfigRefusesAnUnknownEncoderAndAnOddWidth) {
  EXPECT_EQ(protonet::parse_config(json::object()).encoder, "conv4");
  EXPECT_DOUBLE_EQ(protonet::parse_config(json::object()).drop_rate, 0.1);
  try {
    protonet::parse_config({{"model", {{"encoder", "vgg"}}}});
    ADD_FAILURE() << "encoder vgg accepted";
  } catch (const mlh::Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.encoder"), std::string::npos) << e.what();
  }
  try {
    protonet::parse_config({{"model", {{"encoder", "resnet12"}}}, {"width", 63}});
    ADD_FAILURE() << "width 63 accepted";
  } catch (const mlh::Error& e) {
    EXPECT_EQ(e.code(), MLH_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("'width'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("157.5"), std::string::npos) << e.what();
  }
  EXPECT_EQ(protonet::parse_config({{"width", 63}}).width, 63) << "Conv-4 takes any width";
  EXPECT_THROW(protonet::parse_config({{"model", {{"encoder", "resnet12"}, {"drop_rate", 1.0}}}}), mlh::Error);
}

json resnet_run_config() {
  json c = small_config();
  c["model"] = {{"encoder", "resnet12"}};
  c["width"] = 8;
  return c;
}

// Train on the blobs (4-way validation: chance 0.25), export FEAT's names with the metadata,
// and evaluate on the unseen classes.
TEST(ProtonetResNet12, TrainsOnBlobsLearnsExportsAndEvaluates) {
  TempDir dir;
  FakeHost host;
  std::string error;
  ASSERT_EQ(run(host, "train", resnet_run_config(), dir.path(), false, &error), MLH_OK) << error;
  const json summary = json::parse(host.summary);
  EXPECT_GT(summary["best_val_acc"].get<double>(), 0.7) << host.summary;
  EXPECT_LT(host.metrics["train/loss"].back(), host.metrics["train/loss"].front());
  EXPECT_EQ(summary["parameters"], protonet::ResNet12(1, 8, 0.1)->parameter_count());
  std::map<std::string, std::string> metadata;
  const auto weights = mlh::rt::load_safetensors(dir.str() + "/model.safetensors", &metadata);
  EXPECT_EQ(weights.at("layer1.0.conv1.weight").sizes(), (at::IntArrayRef{8, 1, 3, 3}));
  EXPECT_EQ(weights.at("layer4.0.downsample.1.running_var").sizes(), (at::IntArrayRef{80}));
  EXPECT_EQ(metadata, (std::map<std::string, std::string>{{"format", "pt"}, {"model", "protonet-resnet12"},
                                                          {"encoder", "resnet12"}, {"in_channels", "1"},
                                                          {"width", "8"}, {"distance", "euclidean"}}));

  FakeHost eval_host;
  ASSERT_EQ(run(eval_host, "eval", resnet_run_config(), dir.path(), false, &error), MLH_OK) << error;
  EXPECT_GT(json::parse(eval_host.summary)["accuracy"].get<double>(), 0.5) << eval_host.summary;

  // The run's checkpoint does not fit Conv-4: eval with the default encoder says so.
  FakeHost conv4;
  json plain = resnet_run_config();
  plain.erase("model");
  EXPECT_NE(run(conv4, "eval", plain, dir.path(), false, &error), MLH_OK);
}

TEST(ProtonetResNet12, StopAndResumeEndWhereAnUninterruptedRunDoes) {
  json config = resnet_run_config();
  config["epochs"] = 2;
  config["episodes_per_epoch"] = 3;
  config["val_episodes"] = 2;
  TempDir whole, stopped;
  const std::string pinned = R"({"torch_device": "cpu", "precision": "fp32", "threads": {"intra_op": 2}})";
  FakeHost a, b, c;
  std::string error;
  ASSERT_EQ(run(a, "train", config, whole.path(), false, &error, pinned), MLH_OK) << error;
  b.stop_at = 4;
  ASSERT_EQ(run(b, "train", config, stopped.path(), false, &error, pinned), MLH_ERR_CANCELLED);
  ASSERT_EQ(run(c, "train", config, stopped.path(), true, &error, pinned), MLH_OK) << error;
  EXPECT_EQ(c.progress, 6);
  const auto wa = mlh::rt::load_safetensors(whole.str() + "/model.safetensors");
  const auto wb = mlh::rt::load_safetensors(stopped.str() + "/model.safetensors");
  ASSERT_EQ(wa.size(), wb.size());
  for (const auto& [name, t] : wa) EXPECT_TRUE(at::equal(t, wb.at(name))) << name;
}

}  // namespace
