// Warm starts from the ProtoNet reference (jakesnell/prototypical-networks): its train.py
// saves best_model.pt as the whole pickled Protonet module. The fixture was written by the
// reference's own code with PyTorch 2.15 (tests/protonet/python/reference_protonet.py, which
// regenerates it); here it is read without Python, mapped onto Conv-4's names, and the
// encoder must embed the fixture's images as the reference did.
#include <gtest/gtest.h>

#include <string>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <mlh/runtime/warm_start.hpp>

#include "model.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace {

const std::string kFixtures = PROTONET_REFERENCE_FIXTURES;

TEST(ProtonetReference, WholeModuleFromTheReferenceEmbedsAsTheReference) {
  const mlh::rt::WeightsFile file = mlh::rt::read_weights_file(kFixtures + "/best_model.pt");
  EXPECT_EQ(file.format, "torch.save state dict");
  // The pickled module's tensors, named as its state_dict() names them.
  ASSERT_TRUE(file.tensors.count("encoder.0.0.weight")) << file.tensors.size();
  ASSERT_TRUE(file.tensors.count("encoder.3.1.running_var"));
  EXPECT_EQ(file.tensors.size(), 4u * 7u);  // conv weight, bias; norm weight, bias, 3 statistics

  at::manual_seed(1);
  protonet::Conv4 net(/*in_channels=*/1, /*width=*/8), untouched(1, 8);
  const mlh::rt::WarmStartReport report = mlh::rt::load_weights_into(*net, file, {}, protonet::reference_weight_name);
  EXPECT_EQ(report.loaded, 28u) << report.describe();
  EXPECT_TRUE(report.unused.empty() && report.kept_buffers.empty()) << report.describe();

  const auto expected = mlh::rt::read_weights_file(kFixtures + "/expected.pt").tensors;
  net->eval();
  untouched->eval();
  torch::NoGradGuard no_grad;
  const at::Tensor z = net->forward(expected.at("x"));
  ASSERT_EQ(z.sizes(), expected.at("z").sizes());
  EXPECT_LT((z - expected.at("z")).abs().max().item<double>(), 1e-5);
  EXPECT_GT((untouched->forward(expected.at("x")) - expected.at("z")).abs().max().item<double>(), 1e-2)
      << "a Conv-4 that did not load the file must disagree";
}

TEST(ProtonetReference, OnlyTheReferencesEncoderNamesAreMapped) {
  EXPECT_EQ(protonet::reference_weight_name("encoder.0.0.weight"), "block0_conv.weight");
  EXPECT_EQ(protonet::reference_weight_name("encoder.3.1.num_batches_tracked"), "block3_bn.num_batches_tracked");
  for (const char* kept : {"block0_conv.weight", "encoder.4.0.weight", "encoder.0.2.weight", "encoder.0", "head.0.0.w"})
    EXPECT_EQ(protonet::reference_weight_name(kept), kept);
}

}  // namespace
