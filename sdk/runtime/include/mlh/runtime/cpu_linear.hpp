// A linear layer without bias, y = x w^T, differentiable once, whose float32 matrix products
// on an AVX-512 CPU are our own, and the choice between it and LibTorch's at::linear.
//
// Why: at a small transformer's shapes (TRM small: 2592 rows, 128-1024 features) LibTorch's
// float32 GEMM (MKL's sgemm in the PyPI wheel) ran at 80-85% of an AMD EPYC's FMA peak, and
// these products are three quarters of TRM's float32 step. The kernel here (a BLIS-style
// 8 x 32 block of the result in registers, the right-hand side packed once per call and
// shared by the threads) ran the forward and x's gradient at 90-95% of that peak, and the
// weight's gradient as fast as MKL's.
#pragma once

#include <ATen/ATen.h>

namespace mlh::rt {

// Whether linear(x, weight) runs our kernel: x [..., in] and weight [out, in] float32 CPU
// tensors, the CPU has AVX-512F (the 8 x 32 block needs its 32 registers; AVX2 machines keep
// LibTorch's), and CPU autocast is off (under autocast at::linear's bf16 cast applies).
bool cpu_linear_applies(const at::Tensor& x, const at::Tensor& weight);

// x [..., in] times weight [out, in] transposed: [..., out]. Our kernel where
// cpu_linear_applies, otherwise at::linear. Each element of the result, and of the
// gradients, is summed in one fixed order: results do not depend on the thread count. (The
// weight's gradient sums up to four parts of the batch's rows, each thread whole parts of the
// rows it wrote, then adds the parts: with the batch's rows split between two dies' cores, it
// read every row from both and ran the whole TRM step 9% slower.)
at::Tensor linear(const at::Tensor& x, const at::Tensor& weight);

}  // namespace mlh::rt
