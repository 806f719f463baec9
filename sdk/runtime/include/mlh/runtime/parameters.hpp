// The size of a model: the number of its parameters' elements (buffers, such as batch-norm
// statistics or TRM's sign-SGD puzzle embedding, are not parameters and do not count). What
// the plan's model line and the algorithms' logs and summaries report.
#pragma once

#include <cstdint>

namespace torch::nn {
class Module;
}

namespace mlh::rt {

int64_t parameter_count(const torch::nn::Module& module);

}  // namespace mlh::rt
