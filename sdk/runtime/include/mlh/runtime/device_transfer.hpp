// Moving batches to the training device. With pinned host memory a copy to a CUDA device
// is asynchronous, so the next batch's transfer overlaps the current step's compute.
#pragma once

#include <tuple>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

namespace mlh::rt {

// `tensor` on `device`. To a CUDA device with `pinned` (the plan's pinned_memory), a host
// tensor is page-locked first and copied without blocking; the copy is ordered on the
// current CUDA stream, so kernels launched after it see the data. Elsewhere a plain copy,
// and none when the tensor is already there.
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
