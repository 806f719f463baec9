#include "fused_block.hpp"

#include <vector>

#include <ATen/record_function.h>
#include <torch/autograd.h>

#include "fused_block_kernels.hpp"

namespace protonet {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
namespace detail = fused_block_detail;

// Which kernels take x: NCHW where x is contiguous (also when it is NHWC as well, as with one
// channel or 1 x 1 planes), NHWC where it is only channels-last.
bool channels_last_only(const at::Tensor& x) {
  return !x.is_contiguous() && x.is_contiguous(at::MemoryFormat::ChannelsLast);
}

// One value per channel of a 1-d tensor; `absent` (1 or 0) where it is undefined (no affine).
std::vector<double> per_channel(const at::Tensor& t, int64_t channels, double absent) {
  if (!t.defined()) return std::vector<double>(static_cast<size_t>(channels), absent);
  const at::Tensor values = t.detach().to(at::kDouble).contiguous();
  return std::vector<double>(values.data_ptr<double>(), values.data_ptr<double>() + channels);
}

struct BatchNormReluPool : public torch::autograd::Function<BatchNormReluPool> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& weight,
                            const at::Tensor& bias, const at::Tensor& running_mean, const at::Tensor& running_var,
                            double momentum, double eps) {
    const int64_t channels = x.size(1);
    const std::vector<double> gamma = per_channel(weight, channels, 1.0), beta = per_channel(bias, channels, 0.0);
    const bool nhwc = channels_last_only(x);
    const detail::BlockForward f = nhwc ? detail::forward_nhwc(x, gamma, beta, eps)
                                        : detail::forward_nchw(x.contiguous(), gamma, beta, eps);
    if (running_mean.defined() && momentum != 0.0) {
      at::NoGradGuard no_grad;
      running_mean.mul_(1.0 - momentum).add_(f.mean.to(running_mean.scalar_type()), momentum);
    }
    if (running_var.defined() && momentum != 0.0) {
      at::NoGradGuard no_grad;
      const double count = static_cast<double>(x.numel() / channels);  // >= 4: fused_block_applies
      const double unbiased = count / (count - 1);
      running_var.mul_(1.0 - momentum).add_(f.variance.to(running_var.scalar_type()), momentum * unbiased);
    }
    ctx->save_for_backward({nhwc ? x : x.contiguous(), weight});
    ctx->saved_data["mean"] = f.mean;
    ctx->saved_data["invstd"] = f.invstd;
    ctx->saved_data["winners"] = f.winners;
    ctx->saved_data["input_needs_grad"] = x.requires_grad();
    ctx->saved_data["nhwc"] = nhwc;
    return f.out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& weight = saved[1];
    detail::BlockForward f;
    f.mean = ctx->saved_data["mean"].toTensor();
    f.invstd = ctx->saved_data["invstd"].toTensor();
    f.winners = ctx->saved_data["winners"].toTensor();
    const bool input_needs_grad = ctx->saved_data["input_needs_grad"].toBool();
    const bool nhwc = ctx->saved_data["nhwc"].toBool();
    const at::Tensor grad = grad_outputs[0].to(x.scalar_type())
                                .contiguous(nhwc ? at::MemoryFormat::ChannelsLast : at::MemoryFormat::Contiguous);
    const std::vector<double> gamma = per_channel(weight, x.size(1), 1.0);
    const detail::BlockBackward b = nhwc ? detail::backward_nhwc(x, grad, f, gamma, input_needs_grad)
                                         : detail::backward_nchw(x, grad, f, gamma, input_needs_grad);
    const bool affine = weight.defined();
    return {b.dx, affine ? b.dweight.to(weight.scalar_type()) : at::Tensor(),
            affine ? b.dbias.to(weight.scalar_type()) : at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor()};
  }
};

}  // namespace

bool fused_block_applies(const at::Tensor& x) {
  return x.defined() && x.device().is_cpu() && (x.scalar_type() == at::kFloat || x.scalar_type() == at::kBFloat16) &&
         x.dim() == 4 && x.size(0) >= 1 &&
         x.size(2) >= 2 && x.size(3) >= 2 && (x.is_contiguous() || x.is_contiguous(at::MemoryFormat::ChannelsLast));
}

at::Tensor batch_norm_relu_pool(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                const at::Tensor& running_mean, const at::Tensor& running_var, double momentum,
                                double eps) {
  RECORD_FUNCTION("protonet::batch_norm_relu_pool", std::vector<c10::IValue>({x}));  // a profiler range, as ATen's ops
  return BatchNormReluPool::apply(x, weight, bias, running_mean, running_var, momentum, eps);
}

}  // namespace protonet
