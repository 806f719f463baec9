// What PyTorch's torch.save writes (a zip archive: data.pkl, a pickle, and one record per
// storage under data/), read into tensors by name, without Python.
//
// LibTorch's own unpickler (torch::pickle_load) refuses the files torch.save writes for a
// state_dict(): they are OrderedDicts carrying a `_metadata` attribute, set by a BUILD opcode it
// does not implement. So this is a small pickle machine of its own: the opcodes of protocols
// 2-5 that torch.save emits, and the globals of weights files (collections.OrderedDict,
// torch._utils._rebuild_tensor_v2 / _rebuild_parameter, the torch.<Type>Storage classes).
// Any other class becomes an opaque object that keeps the state BUILD gives it, which is how a
// whole module saved with torch.save(model) is read: its `_parameters`, `_buffers` (persistent
// ones) and `_modules` are walked into dotted names, as module.state_dict() would name them.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <string>

namespace mlh::rt {

// The tensors of the file by name: the dict itself when the pickle is a dict of tensors, a
// dict found under "state_dict" or "model" when it is a training checkpoint's dict, or the
// parameters and buffers of a pickled nn.Module. Tensors are on the CPU whatever device they
// were saved from. Throws mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming the file and what it
// could not read (an opcode, a global, a missing record).
std::map<std::string, at::Tensor> read_torch_save_tensors(const std::string& path);

}  // namespace mlh::rt
