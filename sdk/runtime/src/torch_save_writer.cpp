#include "mlh/runtime/torch_save_writer.hpp"

#include <ATen/ATen.h>
#include <ATen/core/Dict.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickler.h>

#include <mlh/atomic_file.hpp>

namespace mlh::rt {

void write_torch_save(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& tensors) {
  c10::Dict<std::string, at::Tensor> dict;  // keeps insertion order, as a Python dict
  for (const auto& [name, tensor] : tensors) dict.insert(name, tensor.to(at::kCPU).contiguous());

  // What torch::pickle_save does, with aggregates untagged (the last argument): torch.load's
  // weights_only unpickler knows no torch.jit._pickle.restore_type_tag.
  std::vector<char> pickle;
  torch::jit::Pickler pickler([&](const char* bytes, size_t size) { pickle.insert(pickle.end(), bytes, bytes + size); },
                              /*tensor_table=*/nullptr, /*type_renamer=*/nullptr, /*memoized_class_types=*/nullptr,
                              /*get_tensor_id=*/nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(c10::IValue(dict));
  pickler.stop();

  AtomicFile file(path);
  {
    caffe2::serialize::PyTorchStreamWriter archive([&](const void* bytes, size_t size) {
      file.write(bytes, size);
      return size;
    });
    torch::jit::writeArchiveAndTensors("data", pickle.data(), pickle.size(), pickler.tensorData(), archive);
    archive.writeEndOfFile();
  }
  file.commit();
}

}  // namespace mlh::rt
