// Conv-4's batch norm -> ReLU -> 2x2 max pool in training mode, fused for the CPU (fp32, and
// bf16 under autocast; NCHW and NHWC, kernels in fused_block_nchw.cpp and fused_block_nhwc.cpp).
//
// Why: in a 5-way 5-shot 15-query episode these three ops, run one after another by ATen,
// took as long as all four convolutions' forward passes together (35 of 140 ms for the first
// block alone): each reads and writes the whole 100 x 64 x 28 x 28 activation, forward and
// backward, about fifteen passes over 20 MB. The fused op reads the convolution's output
// twice in the forward (statistics, then normalise + ReLU + pool into the 4x smaller output)
// and twice in the backward (the batch-norm reductions touch only the pooled winners), and
// keeps a byte per pooled value saying which of the four inputs won (or that ReLU cut it).
//
// It computes what at::batch_norm(training) -> at::relu -> at::max_pool2d({2, 2}) compute:
// biased variance for normalising, unbiased for the running variance, the first of equal
// maxima as the pooling's winner, rows and columns past the last full window left out of
// the pooling but not of the statistics. The tests compare outputs, gradients and running
// statistics with those three ops.
#pragma once

#include <ATen/ATen.h>

namespace protonet {

// Whether the fused op can take `x`: a defined fp32 or bf16 CPU tensor, N x C x H x W,
// contiguous in NCHW or in NHWC (channels-last) layout, at least one image of at least 2 x 2.
// Anything else (CUDA, MPS, fp16, other strides) takes ATen's three ops. The output is in x's
// layout. In bf16 the statistics and gradients are computed in double and float as in fp32,
// and the values the pooling compares are the bf16 values ATen's ops would compare.
bool fused_block_applies(const at::Tensor& x);

// max_pool2d(relu(batch_norm(x, weight, bias, training=true)), 2). Updates running_mean and
// running_var with `momentum` as at::batch_norm does (momentum 0 leaves them as they are).
// Differentiable in x, weight and bias (once: no double backward).
at::Tensor batch_norm_relu_pool(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                                const at::Tensor& running_mean, const at::Tensor& running_var, double momentum,
                                double eps);

}  // namespace protonet
