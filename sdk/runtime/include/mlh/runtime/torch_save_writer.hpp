// A dict of tensors written as PyTorch's torch.save writes one (a zip archive: data.pkl and one
// record per storage under data/), for Python tools that torch.load what they read, such as
// the reference implementations' evaluators. Python's default torch.load (weights_only=True)
// reads it: the pickle is a plain dict of tensors, without the TorchScript type tags that
// LibTorch's torch::pickle_save puts on its containers and that weights_only refuses.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

namespace mlh::rt {

// Writes atomically (see AtomicFile), the keys in the order given; tensors on any device are
// copied to the CPU and made contiguous. An I/O failure is an mlh::Error(MLH_ERR_IO) naming
// the path.
void write_torch_save(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& tensors);

}  // namespace mlh::rt
