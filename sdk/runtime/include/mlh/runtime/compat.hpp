// The one place for differences between the LibTorch versions the runtime builds against:
// Debian's CPU-only 1.13 and CUDA-enabled 2.x from a PyTorch wheel.
#pragma once

#include <torch/version.h>

#define MLH_TORCH_VERSION_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

// Whether LibTorch was built with CUDA, known at compile time so that CUDA-only code is
// compiled only where LibTorch has it. The headers cannot tell: 2.x wheels ship the CUDA
// headers in CPU-only builds too, and 2.x no longer defines AT_CUDA_ENABLED(). The
// mlhost::runtime CMake target defines it (PUBLIC) from what find_package(Torch) reports.
#ifndef MLH_TORCH_HAS_CUDA
#error "MLH_TORCH_HAS_CUDA is defined by the mlhost::runtime CMake target: link it"
#endif

// MPS (Apple GPUs). 2.x has the MPS allocator's hooks (emptyCache, the allocated and driver
// memory figures; Debian's 1.13 headers do not ship them); autocast on MPS came in 2.5 for
// fp16 and 2.6 for bf16 (which needs macOS 14 as well).
#define MLH_TORCH_HAS_MPS_MEMORY MLH_TORCH_VERSION_AT_LEAST(2, 0)
#define MLH_TORCH_HAS_MPS_BF16_AUTOCAST MLH_TORCH_VERSION_AT_LEAST(2, 6)

// Autocast switches per device type. 2.4 added device-type functions and deprecated the
// per-device ones (set_enabled for CUDA, set_cpu_enabled, set_autocast_gpu_dtype, ...) that
// 1.13 only has.
#include <ATen/autocast_mode.h>

namespace mlh::rt::compat {

inline bool autocast_enabled(c10::DeviceType device) {
#if MLH_TORCH_VERSION_AT_LEAST(2, 4)
  return at::autocast::is_autocast_enabled(device);
#else
  return device == c10::DeviceType::CUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}

inline void set_autocast_enabled(c10::DeviceType device, bool enabled) {
#if MLH_TORCH_VERSION_AT_LEAST(2, 4)
  at::autocast::set_autocast_enabled(device, enabled);
#else
  if (device == c10::DeviceType::CUDA)
    at::autocast::set_enabled(enabled);
  else
    at::autocast::set_cpu_enabled(enabled);
#endif
}

inline at::ScalarType autocast_dtype(c10::DeviceType device) {
#if MLH_TORCH_VERSION_AT_LEAST(2, 4)
  return at::autocast::get_autocast_dtype(device);
#else
  return device == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype()
                                         : at::autocast::get_autocast_cpu_dtype();
#endif
}

inline void set_autocast_dtype(c10::DeviceType device, at::ScalarType dtype) {
#if MLH_TORCH_VERSION_AT_LEAST(2, 4)
  at::autocast::set_autocast_dtype(device, dtype);
#else
  if (device == c10::DeviceType::CUDA)
    at::autocast::set_autocast_gpu_dtype(dtype);
  else
    at::autocast::set_autocast_cpu_dtype(dtype);
#endif
}

}  // namespace mlh::rt::compat

// The key of a parameter's entry in Optimizer::state(): a string of its TensorImpl's address
// in 1.13, the address itself (void*) in 2.x. Chosen by the map's key type, not a version.
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <torch/optim/optimizer.h>

namespace mlh::rt::compat {

using OptimizerStateKey =
    std::decay_t<decltype(std::declval<torch::optim::Optimizer&>().state())>::key_type;

namespace detail {
inline void* optimizer_state_key(const at::Tensor& param, void*) { return param.unsafeGetTensorImpl(); }
inline std::string optimizer_state_key(const at::Tensor& param, const std::string&) {
  std::ostringstream key;  // what 1.13's c10::guts::to_string(TensorImpl*) writes
  key << param.unsafeGetTensorImpl();
  return key.str();
}
}  // namespace detail

inline OptimizerStateKey optimizer_state_key(const at::Tensor& param) {
  return detail::optimizer_state_key(param, OptimizerStateKey{});
}

}  // namespace mlh::rt::compat

// Attention over [batch, heads, sequence, head_dim] tensors: softmax(q k^T / sqrt(head_dim)) v,
// with positions after the query's masked out when `causal`. 2.x has the fused
// at::scaled_dot_product_attention (what the TRM reference calls): flash and memory-efficient
// kernels on CUDA, and a flash kernel on the CPU. (Short sequences in float32 on a CPU take the
// runtime's own kernel before this: mlh::rt::attention in fused_attention.hpp.) In bfloat16 on
// the CPU its forward and backward together are about 3x slower than batched matmuls that use
// the CPU's bf16 instructions (measured on AVX512-BF16 and AMX machines). So the CPU in reduced
// precision, and 1.13 (which has no public fused kernel), spell it out in plain ops.
#include <cmath>
#include <limits>
#include <vector>
#include <ATen/ATen.h>

namespace mlh::rt::compat {

// Three passes over the scores and none more: the scale rides in the first batched matmul
// (alpha), and the softmax reads and writes the scores in the inputs' dtype (ATen's CPU softmax
// computes a bf16 row in float, in 1.13 and 2.x: within bf16's rounding of float's result).
inline at::Tensor attention_in_plain_ops(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, bool causal) {
  const int64_t sq = q.size(-2), sk = k.size(-2), d = q.size(-1);
  const at::Tensor q3 = q.reshape({-1, sq, d}), k3 = k.reshape({-1, sk, d}), v3 = v.reshape({-1, sk, v.size(-1)});
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
#if MLH_TORCH_VERSION_AT_LEAST(2, 0)
  at::Tensor scores = at::baddbmm(at::empty({q3.size(0), sq, sk}, q.options()), q3, k3.transpose(1, 2), /*beta=*/0,
                                  /*alpha=*/scale);
#else
  // LibTorch 1.13's bf16 baddbmm made NaN scores now and then on an AVX512-BF16 EPYC (13-23 of
  // 40 calls at [6, 7, 8], with the added input zeroed or not); bmm and a scale never did.
  at::Tensor scores = at::bmm(q3, k3.transpose(1, 2)).mul_(scale);
#endif
  if (causal) {
    const at::Tensor future = at::ones({sq, sk}, q.options().dtype(at::kBool)).triu(1);
    scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
  }
  const at::Tensor probs = at::softmax(scores, -1);
  std::vector<int64_t> shape = q.sizes().vec();
  shape.back() = v.size(-1);
  return at::bmm(probs, v3).view(shape);
}

inline at::Tensor scaled_dot_product_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                               bool causal) {
#if MLH_TORCH_VERSION_AT_LEAST(2, 0)
  const bool reduced_precision_on_cpu =
      q.is_cpu() && q.scalar_type() != at::kFloat && q.scalar_type() != at::kDouble;
  if (!reduced_precision_on_cpu)
    return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/causal);
#endif
  return attention_in_plain_ops(q, k, v, causal);
}

}  // namespace mlh::rt::compat

// Optimizer::load for archives from either LibTorch. 1.13 keys an optimizer's per-parameter
// states by the hex address of the parameter ("0x55d1..."); 2.x writes decimal addresses and
// reads keys with std::stoull, which turns every "0x..." into 0: the states collide and
// step() crashes on a null state. Under 2.x this reads such archives itself for LibTorch's
// optimizers (Adam, AdamW, SGD, RMSprop, Adagrad); another optimizer with a 1.13 archive is a
// c10::Error naming it. 1.13 reads 2.x's decimal keys as it reads its own.
namespace torch::serialize {
class InputArchive;
}
namespace mlh::rt::compat {
void load_optimizer(torch::optim::Optimizer& optimizer, torch::serialize::InputArchive& archive);
}  // namespace mlh::rt::compat

// c10::Allocator::allocate() is const in 1.13 and not in 2.x, where copy_data() became pure
// virtual with it: an allocator subclass (memory_limit.cpp) picks its shape by this.
#include <type_traits>
#include <c10/core/Allocator.h>

namespace mlh::rt::compat {
inline constexpr bool kAllocatorAllocateIsConst =
    std::is_same_v<decltype(&c10::Allocator::allocate), c10::DataPtr (c10::Allocator::*)(size_t) const>;
}  // namespace mlh::rt::compat
