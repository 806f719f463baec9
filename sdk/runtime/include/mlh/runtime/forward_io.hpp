// The `forward` command's files, one shape for every algorithm: a trained run's network on
// the user's inputs, its outputs written for comparison with the same network elsewhere
// (the mlhost Python package's modules, an ONNX export: docs/using-elsewhere.md).
//
//   host --algorithm A --run-dir R --resume --command forward --set forward.inputs=in.safetensors
//
// reads the named tensors of `in.safetensors`, checked against what the algorithm's network
// takes (read_forward_inputs), and writes the outputs to R/commands/forward-N/outputs.safetensors
// (write_forward_outputs), saying where in the log and in the summary ("outputs").
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace mlh {
class RunContext;
}

namespace mlh::rt {

// One input tensor the network takes.
struct ForwardInput {
  enum class Kind { kFloat, kInteger };
  std::string name;
  // Each dimension's size; -1 for any (the batch). Every tensor's -1 dimensions must agree
  // with the others' first dimension: one batch size.
  std::vector<int64_t> shape;
  Kind kind = Kind::kFloat;
  bool required = true;  // an optional one missing is left out of the result
};

// Reads `path` (the config field forward.inputs; empty is an error saying to set it) and
// checks every wanted tensor: present (when required), of the wanted rank and sizes, a
// floating dtype for kFloat (returned as float32) or an integer one for kInteger (returned as
// int64), the same batch size throughout. A violation, a tensor the network does not take
// or an unreadable file is an mlh::Error(MLH_ERR_INVALID_ARGUMENT or MLH_ERR_IO) naming the
// file and the tensor.
std::map<std::string, at::Tensor> read_forward_inputs(const std::string& path, const std::vector<ForwardInput>& wanted);

// Writes `outputs` (moved to the CPU, float outputs as float32) to
// <ctx.run_dir()>/outputs.safetensors with `metadata` plus "inputs" (the inputs' path),
// logs the path and each output's shape, and writes the summary {"outputs": path,
// "shapes": {name: [sizes]}, "inputs": inputs_path} merged with `summary` (a JSON object's
// text). Returns the path.
std::string write_forward_outputs(mlh::RunContext& ctx, const std::map<std::string, at::Tensor>& outputs,
                                  const std::string& inputs_path, const std::map<std::string, std::string>& metadata = {},
                                  const std::string& summary = "{}");

}  // namespace mlh::rt
