#include "mlh/runtime/parameters.hpp"

#include <torch/nn/module.h>

namespace mlh::rt {

int64_t parameter_count(const torch::nn::Module& module) {
  int64_t n = 0;
  for (const at::Tensor& p : module.parameters()) n += p.numel();
  return n;
}

}  // namespace mlh::rt
