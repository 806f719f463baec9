// Model weights in the safetensors format (https://github.com/huggingface/safetensors), the
// format other tools (PyTorch, JAX, Hugging Face) load without running our code:
//   8 bytes   N, little-endian u64
//   N bytes   JSON header: {"__metadata__": {str: str}, "<name>": {"dtype": "F32",
//             "shape": [2, 3], "data_offsets": [begin, end]}, ...}, padded with spaces so
//             that the data starts 8-byte aligned
//   the rest  the tensors' bytes, little-endian, C-contiguous; offsets are relative to here
// Dtypes: F64 F32 F16 BF16 I64 I32 I16 I8 U8 BOOL.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <string>

namespace torch::nn {
class Module;
}

namespace mlh::rt {

// Writes atomically (see AtomicFile); tensors on any device are copied to the CPU. A dtype
// the format lacks is an mlh::Error(MLH_ERR_INVALID_ARGUMENT), an I/O failure MLH_ERR_IO.
void save_safetensors(const std::map<std::string, at::Tensor>& tensors, const std::string& path,
                      const std::map<std::string, std::string>& metadata = {});

// The module's parameters and buffers under their dotted names ("encoder.0.weight"), with
// metadata {"format": "pt"} (what Hugging Face's loaders expect) unless `metadata` says.
void export_module_weights(const torch::nn::Module& module, const std::string& path,
                           std::map<std::string, std::string> metadata = {});

// Reads a file, CPU tensors. The header is validated against the format (known dtypes,
// shape x item size == byte span, offsets in range, covering the data exactly without gaps
// or overlaps); a violation is an mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming the file and
// tensor, an unreadable file MLH_ERR_IO. `metadata`, if given, receives "__metadata__".
std::map<std::string, at::Tensor> load_safetensors(const std::string& path,
                                                   std::map<std::string, std::string>* metadata = nullptr);

}  // namespace mlh::rt
