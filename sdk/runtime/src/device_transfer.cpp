// Moving batches to the training device (see device_transfer.hpp).
#include <mlh/runtime/device_transfer.hpp>

namespace mlh::rt {

at::Tensor to_device(const at::Tensor& tensor, at::Device device, bool pinned) {
  if (tensor.device() == device) return tensor;
  // Pinning only pays off for host-to-CUDA copies, and needs a CUDA build to work at all.
  if (pinned && device.is_cuda() && tensor.device().is_cpu()) {
    const at::Tensor host = tensor.is_pinned() ? tensor : tensor.pin_memory();
    return host.to(device, /*non_blocking=*/true);
  }
  return tensor.to(device);
}

std::vector<at::Tensor> to_device(const std::vector<at::Tensor>& tensors, at::Device device,
                                  bool pinned) {
  std::vector<at::Tensor> moved;
  moved.reserve(tensors.size());
  for (const at::Tensor& t : tensors) moved.push_back(to_device(t, device, pinned));
  return moved;
}

}  // namespace mlh::rt
