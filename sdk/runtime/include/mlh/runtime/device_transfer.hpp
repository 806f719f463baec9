// Moving batches to the training device. With pinned host memory (the plan's pinned_memory) a
// copy to a CUDA device is asynchronous, so the next batch's transfer overlaps the current
// step's compute. Every copy is counted for the run's report (plan_effects.hpp:
// pinned_memory.pinned_copies / pageable_copies).
#pragma once

#include <tuple>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace mlh::rt {

// Whether batches for `device` are pinned: the plan asks for it and the device's trait says
// copies from page-locked memory run asynchronously there (pinned_copies: CUDA GPUs; LibTorch
// pins for CUDA alone).
bool pins_batches(at::Device device, bool pinned);

// `tensor` page-locked when pins_batches(device, pinned) and it is a host tensor not pinned
// yet; else `tensor` itself. Data workers call it, so that pinning (a copy) runs off the
// training thread (prefetcher.hpp).
at::Tensor pin_for_transfer(const at::Tensor& tensor, at::Device device, bool pinned);

// `tensor` on `device`. To a CUDA device with `pinned`, a host tensor is page-locked first
// (unless it already is) and copied without blocking; the copy is ordered on the current CUDA
// stream, so kernels launched after it see the data. Elsewhere a plain copy, and none when
// the tensor is already there.
at::Tensor to_device(const at::Tensor& tensor, at::Device device, bool pinned);

std::vector<at::Tensor> to_device(const std::vector<at::Tensor>& tensors, at::Device device,
                                  bool pinned);

// A tuple of tensors, e.g. (inputs, targets).
template <class... Tensors>
std::tuple<Tensors...> to_device(const std::tuple<Tensors...>& tensors, at::Device device,
                                 bool pinned) {
  return std::apply(
      [&](const auto&... t) { return std::tuple<Tensors...>(to_device(t, device, pinned)...); },
      tensors);
}

}  // namespace mlh::rt
