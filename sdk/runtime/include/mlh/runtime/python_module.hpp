// A researcher's own network, written as a torch.nn.Module in a Python file, trained by a C++
// algorithm with nothing compiled: the training worker embeds the Python of the torch wheel
// this build links (the same LibTorch, so tensors and autograd cross without a copy), imports
// the file, builds the class and hands its parameters and buffers to a C++ module by
// reference. Whatever the runtime does to that C++ module (moving it to a device, casting,
// loading a checkpoint, an optimizer's step) changes the Python module's tensors, because
// they are the same tensors.
//
// The embedding lives in a shared library of its own (libmlhost_python.so, which links
// libpython and libtorch_python), loaded the first time a run names a Python module: a plugin
// that never does loads neither. A build against a LibTorch without its Python half (Debian's
// 1.13) has no such library, and python_modules_unavailable() says so.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

namespace torch::nn {
class Module;
}

namespace mlh::rt {

// A config's "path/to/file.py:Class" and the keyword arguments the class is built with.
struct PythonModuleSpec {
  std::string file;        // the .py file (the host makes a relative one absolute)
  std::string class_name;  // a class defined in it (or imported into it), a torch.nn.Module
  nlohmann::json kwargs;   // keyword arguments: the algorithm's (in_channels, ...) and the user's
};

// Splits "path/to/file.py:Class". Throws mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming `field`
// when the value has no ":Class", the file does not end in .py or does not exist.
PythonModuleSpec parse_python_module(const std::string& field, const std::string& value);

// "" where this build runs Python modules (the interpreter itself is started on first use);
// else why not, in a sentence that says what to do.
std::string python_modules_unavailable();

// The user's module, alive in the embedded interpreter. Its methods take the interpreter's
// lock themselves; backward passes and everything else run without it.
class PythonModule {
 public:
  virtual ~PythonModule() = default;
  // Calls the module on `inputs`; its result is one tensor or a tuple or list of tensors. A
  // Python exception becomes an mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming the file, the
  // class and the line of the user's code it came from.
  virtual std::vector<at::Tensor> forward(const std::vector<at::Tensor>& inputs) = 0;
  // module.train(on) / module.eval().
  virtual void train(bool on) = 0;
  // Registers every parameter and buffer of the module in `owner` under its Python name
  // ("body.0.weight": nested empty modules for the dots), the same tensors, so that
  // owner.named_parameters() is the module's state_dict. Throws naming the clash when
  // `owner` already has one of the names.
  virtual void share_tensors_with(torch::nn::Module& owner) = 0;
  // "file.py:Class", as messages name it.
  virtual std::string name() const = 0;
};

// Starts the interpreter (once per process), imports spec.file and builds spec.class_name with
// spec.kwargs. Throws mlh::Error(MLH_ERR_INVALID_ARGUMENT) naming the file and the class when
// the file does not load, the class is missing or not a torch.nn.Module, or its constructor
// raises, and when this build or its Python cannot run it (the reason of
// python_modules_unavailable, or a torch in that Python that is not the linked LibTorch): the
// config asks for what this build cannot do, so it is the config's error.
std::unique_ptr<PythonModule> load_python_module(const PythonModuleSpec& spec);

// Shapes in messages: "[32, 1, 28, 28]".
std::string shape_text(const at::Tensor& t);

}  // namespace mlh::rt
