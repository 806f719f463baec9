// Moving batches to the training device (see device_transfer.hpp).
#include <mlh/runtime/device_transfer.hpp>

#include <mlh/device_traits.hpp>
#include <mlh/runtime/plan_effects.hpp>

namespace mlh::rt {
namespace {

// A tensor in the host's memory: on a device that is not an accelerator.
bool in_host_memory(const at::Tensor& tensor) { return !device_traits(tensor.device().str()).accelerator; }

}  // namespace

bool pins_batches(at::Device device, bool pinned) { return pinned && device_traits(device.str()).pinned_copies; }

at::Tensor pin_for_transfer(const at::Tensor& tensor, at::Device device, bool pinned) {
  if (!pins_batches(device, pinned) || !in_host_memory(tensor) || tensor.is_pinned()) return tensor;
  return tensor.pin_memory();
}

at::Tensor to_device(const at::Tensor& tensor, at::Device device, bool pinned) {
  if (tensor.device() == device) return tensor;
  if (pins_batches(device, pinned) && in_host_memory(tensor)) {
    count_plan_effect("pinned_memory", "pinned_copies");
    return pin_for_transfer(tensor, device, pinned).to(device, /*non_blocking=*/true);
  }
  count_plan_effect("pinned_memory", "pageable_copies");
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
