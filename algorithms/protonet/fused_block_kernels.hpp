// The fused block's CPU kernels, one pair per memory layout, behind the autograd op in
// fused_block.cpp: fused_block_nchw.cpp works a channel's planes at a time, fused_block_nhwc.cpp
// a pixel's channels at a time. Both compute the same values (fused_block.hpp says which) to
// float's rounding, in fp32 or bf16, with the statistics and gradient sums gathered in double
// (NHWC: per row in float first), in an order that does not depend on the number of threads.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

namespace protonet::fused_block_detail {

// A pooled value's winner: 0-3 for the window's top-left, top-right, bottom-left and
// bottom-right input; kCut where ReLU made the output 0 (no gradient flows back).
constexpr uint8_t kCut = 4;

// An N x C x H x W input's sizes, and its pooled output's (a last odd row or column is never
// pooled). Each layout's kernels add their offsets.
struct BlockDims {
  int64_t n, c, h, w;
  int64_t ho() const { return h / 2; }
  int64_t wo() const { return w / 2; }
};
inline BlockDims dims_of(const at::Tensor& x) { return {x.size(0), x.size(1), x.size(2), x.size(3)}; }

// The forward's results: the pooled output (in x's layout), which input won each pooled value
// (kCut where ReLU cut it), and each channel's mean, biased variance and 1/sqrt(var + eps) (double).
struct BlockForward {
  at::Tensor out, winners, mean, variance, invstd;
};

// The backward's: the input gradient (undefined unless asked for) and each channel's weight and
// bias gradient (double).
struct BlockBackward {
  at::Tensor dx, dweight, dbias;
};

// x is N x C x H x W, contiguous in the layout the function names; gamma and beta hold one value
// per channel. grad is the pooled output's gradient in the same layout.
BlockForward forward_nchw(const at::Tensor& x, const std::vector<double>& gamma, const std::vector<double>& beta,
                          double eps);
BlockBackward backward_nchw(const at::Tensor& x, const at::Tensor& grad, const BlockForward& saved,
                            const std::vector<double>& gamma, bool input_needs_grad);
BlockForward forward_nhwc(const at::Tensor& x, const std::vector<double>& gamma, const std::vector<double>& beta,
                          double eps);
BlockBackward backward_nhwc(const at::Tensor& x, const at::Tensor& grad, const BlockForward& saved,
                            const std::vector<double>& gamma, bool input_needs_grad);

}  // namespace protonet::fused_block_detail
