#include "resnet12.hpp"

#include <algorithm>
#include <memory>

#include <ATen/ATen.h>
#include <mlh/plugin.hpp>
#include <mlh/runtime/grad_checkpoint.hpp>
#include <torch/nn/init.h>
#include <torch/nn/modules/batchnorm.h>

namespace protonet {

namespace {

constexpr double kLeakySlope = 0.1;
constexpr int64_t kDropBlockSize = 5;

torch::nn::Conv2d conv(int64_t in, int64_t out, int64_t kernel) {
  auto c = torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel).padding(kernel / 2).bias(false));
  // FEAT's initialisation: He normal over the output fan, for leaky ReLU (gain sqrt(2)).
  torch::nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kLeakyReLU);
  return c;
}

}  // namespace

ResNetBlockImpl::ResNetBlockImpl(int64_t in_channels, int64_t out_channels) {
  conv1 = register_module("conv1", conv(in_channels, out_channels, 3));
  bn1 = register_module("bn1", torch::nn::BatchNorm2d(out_channels));
  conv2 = register_module("conv2", conv(out_channels, out_channels, 3));
  bn2 = register_module("bn2", torch::nn::BatchNorm2d(out_channels));
  conv3 = register_module("conv3", conv(out_channels, out_channels, 3));
  bn3 = register_module("bn3", torch::nn::BatchNorm2d(out_channels));
  // downsample.0 (the 1x1 convolution) and downsample.1 (its batch norm), as FEAT names them.
  shortcut_conv = conv(in_channels, out_channels, 1);
  shortcut_bn = torch::nn::BatchNorm2d(out_channels);
  register_module("downsample", torch::nn::ModuleList(shortcut_conv, shortcut_bn));
}

at::Tensor ResNetBlockImpl::forward(const at::Tensor& x, bool recompute) {
  const bool training = is_training();
  auto norm = [&](torch::nn::BatchNorm2d& bn, const at::Tensor& y) {
    return checkpoint_safe_batch_norm(bn, y, training, recompute);
  };
  at::Tensor out = at::leaky_relu(norm(bn1, conv1->forward(x)), kLeakySlope);
  out = at::leaky_relu(norm(bn2, conv2->forward(out)), kLeakySlope);
  out = norm(bn3, conv3->forward(out));
  out = out + norm(shortcut_bn, shortcut_conv->forward(x));
  return at::max_pool2d(at::leaky_relu(out, kLeakySlope), {2, 2});
}

ResNet12Impl::ResNet12Impl(int64_t in_channels, int64_t width, double drop_rate)
    : widths_{width, width * 5 / 2, width * 5, width * 10}, width_(width), drop_rate_(drop_rate) {
  if (width < 2 || width % 2 != 0)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "config field 'width': ResNet-12's stages are width x (1, 2.5, 5, 10) "
                                               "channels, so width must be even (got " + std::to_string(width) + ")");
  if (!(drop_rate >= 0 && drop_rate < 1))
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, "config field 'model.drop_rate': must be in [0, 1)");
  int64_t in = in_channels;
  for (size_t i = 0; i < widths_.size(); ++i) {
    // layer<i> is a list of one block, so its tensors are named layer<i>.0.<tensor> as FEAT's.
    auto layer = register_module("layer" + std::to_string(i + 1), torch::nn::ModuleList());
    blocks_.push_back(ResNetBlock(in, widths_[i]));
    layer->push_back(blocks_.back());
    in = widths_[i];
  }
}

at::Tensor ResNet12Impl::regularise(size_t i, const at::Tensor& x) const {
  if (!is_training() || drop_rate_ <= 0) return x;
  if (i < 2) return at::dropout(x, drop_rate_, /*train=*/true);
  return drop_block(x, drop_rate_, kDropBlockSize);
}

at::Tensor ResNet12Impl::forward(const at::Tensor& x, bool checkpointing) {
  at::Tensor h = x;
  for (size_t i = 0; i < blocks_.size(); ++i) {
    // The first call is the forward; later ones are the checkpoint's recomputations (the
    // counter is shared by every copy the checkpoint makes of the function).
    auto calls = std::make_shared<int>(0);
    ResNetBlock block = blocks_[i];
    h = mlh::rt::maybe_checkpoint(
        checkpointing, [block, calls](const at::Tensor& in) mutable { return block->forward(in, (*calls)++ > 0); }, h);
    h = regularise(i, h);
  }
  return h.mean({2, 3});  // global average pooling
}

int64_t ResNet12Impl::embedding_dim(int64_t, int64_t) const { return widths_.back(); }

double ResNet12Impl::training_flops_per_image(int64_t channels, int64_t height, int64_t width) const {
  double total = 0;
  int64_t in = channels;
  for (size_t i = 0; i < widths_.size(); ++i) {
    const double pixels = static_cast<double>(height) * static_cast<double>(width);
    const double out = static_cast<double>(widths_[i]), c_in = static_cast<double>(in);
    const double reads_input = 2.0 * pixels * out * c_in * (9.0 + 1.0);  // conv1 and the 1x1 shortcut
    const double inner = 2.0 * pixels * out * out * 9.0 * 2.0;          // conv2 and conv3
    // Forward + weight gradient + input gradient; the first stage's input is the image.
    total += (i == 0 ? 2 : 3) * reads_input + 3 * inner;
    in = widths_[i];
    height /= 2;
    width /= 2;
  }
  return total;
}

std::string ResNet12Impl::layers() const {
  std::string w;
  for (int64_t c : widths_) w += (w.empty() ? "" : "-") + std::to_string(c);
  return "4 residual stages of " + w + " channels";
}

std::map<std::string, std::string> ResNet12Impl::export_metadata(int64_t in_channels,
                                                                 const std::string& distance) const {
  return {{"model", "protonet-resnet12"}, {"encoder", "resnet12"}, {"in_channels", std::to_string(in_channels)},
          {"width", std::to_string(width_)}, {"distance", distance}};
}

at::Tensor drop_block(const at::Tensor& x, double rate, int64_t block) {
  const int64_t h = x.size(2), w = x.size(3);
  block = std::max<int64_t>(1, std::min({block, h, w}));
  const int64_t seeds_h = h - block + 1, seeds_w = w - block + 1;
  const double gamma = rate / static_cast<double>(block * block) * static_cast<double>(h * w) /
                       static_cast<double>(seeds_h * seeds_w);
  at::Tensor seeds = at::bernoulli(at::full({x.size(0), x.size(1), seeds_h, seeds_w}, std::min(gamma, 1.0),
                                            x.options().dtype(at::kFloat)));
  // Each seed covers the block x block square below and right of it: padded by block - 1 on
  // every side, a stride-1 max pool of the block's size gives the H x W map of dropped places.
  const at::Tensor dropped =
      at::max_pool2d(at::constant_pad_nd(seeds, {block - 1, block - 1, block - 1, block - 1}, 0), {block, block}, {1, 1});
  const at::Tensor keep = 1.0 - dropped.narrow(2, 0, h).narrow(3, 0, w);
  const at::Tensor kept = keep.sum().clamp_min(1.0);
  return x * (keep * (static_cast<double>(keep.numel()) / kept)).to(x.scalar_type());
}

}  // namespace protonet
