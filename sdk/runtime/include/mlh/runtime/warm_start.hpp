// Warm starts (--init-from): a model's first weights from a file trained elsewhere.
//
// Files read, told apart by their first bytes, not their names (the TRM reference names its
// checkpoints "step_<N>"):
//   - safetensors (model.safetensors of an mlhost run, Hugging Face's files);
//   - an mlhost checkpoint (MLHCKPT1, checkpoints/*.ckpt): its module "model", the one every
//     algorithm's TrainingState holds;
//   - what PyTorch's torch.save writes (a zip archive): a state dict (name -> tensor), a dict
//     holding one under "state_dict" or "model" (Lightning's and many scripts' checkpoints), or
//     a whole nn.Module saved with torch.save(model) (the ProtoNet reference's best_model.pt),
//     read as its state_dict() would name it (src/torch_save_reader.hpp: no Python needed).
//
// Names map when the file's are the model's with one leading prefix more: the prefix every
// name of the file shares with the model ("_orig_mod." of torch.compile, "module." of DDP,
// "_orig_mod.model." of the TRM reference's ACT loss head) is found and dropped.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace torch::nn {
class Module;
}

namespace mlh::rt {

struct WeightsFile {
  std::string path;
  std::string format;  // "safetensors", "mlhost checkpoint", "torch.save state dict"
  std::map<std::string, at::Tensor> tensors;  // CPU tensors by the file's names
};

// Reads `path` (see above). An unreadable file is an mlh::Error(MLH_ERR_IO), one in no known
// format or without tensors MLH_ERR_INVALID_ARGUMENT, each naming the file.
WeightsFile read_weights_file(const std::string& path);

struct WarmStartReport {
  std::string dropped_prefix;              // "" when the names matched as they are
  size_t loaded = 0;                       // parameters and buffers copied from the file
  std::vector<std::string> kept_buffers;   // the model's buffers the file lacks (kept as built)
  std::vector<std::string> unused;         // the file's tensors the model has no place for
  std::vector<std::string> frozen;         // parameters set to requires_grad = false
  std::string describe() const;            // one line for the run's log
};

// The model's name for a tensor of a file, where an algorithm knows another implementation's
// names (ProtoNet's reference calls "block0_conv.weight" "encoder.0.0.weight"); a name it does
// not know comes back unchanged.
using WeightNameMap = std::function<std::string(const std::string&)>;

// Copies the file's tensors (renamed by `rename`, when given) into `model` (its device and dtype), then freezes the parameters
// that `freeze` names: a parameter's full name, a prefix ending at a dot ("encoder" freezes
// "encoder.0.weight") or a glob with '*'. Nothing is copied unless everything fits:
//   - a parameter the file lacks, a tensor of another shape, a pattern that names no
//     parameter: mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming the file and the tensor (with
//     both shapes) or the pattern;
//   - a buffer the file lacks keeps its value (buffers such as rotary tables are often not
//     saved) and the file's tensors the model has no place for are left: both reported.
WarmStartReport load_weights_into(torch::nn::Module& model, const WeightsFile& file,
                                  const std::vector<std::string>& freeze = {}, const WeightNameMap& rename = {});

}  // namespace mlh::rt
