// libmlhost_python.so: the embedded interpreter behind mlh/runtime/python_module.hpp. The
// runtime loads it (RTLD_GLOBAL) the first time a run names a Python module.
//
// The interpreter is the Python whose torch this build links (MLH_PYTHON_EXECUTABLE, the
// virtual environment of scripts/torch-venv.sh): `import torch` there finds the LibTorch
// libraries already in the process and reuses them, so a tensor is one object on both sides
// (THPVariable_Wrap / THPVariable_Unpack). Importing torch installs its Python autograd
// engine, which refuses a backward pass that holds the interpreter's lock: the lock is
// released after start-up and taken only around calls into Python.
#include <Python.h>
#include <dlfcn.h>
#include <torch/csrc/autograd/python_variable.h>

#include <filesystem>
#include <mutex>
#include <string>

#include <ATen/Context.h>
#include <mlh/plugin.hpp>
#include <mlh/runtime/python_module.hpp>
#include <torch/nn/module.h>

#include "user_module_source.hpp"  // kUserModuleSource: python/mlhost/user_module.py

namespace {

namespace fs = std::filesystem;
using mlh::rt::PythonModule;
using mlh::rt::PythonModuleSpec;

// The helpers beside the user_module module (python/mlhost/user_module.py, compiled in: the
// package's load_run builds a run's class with the same code): a Python exception as one line
// naming the user's frame, and where this Python's torch is.
constexpr const char* kHelpers = R"PY(
import faulthandler, os, traceback
import torch

# A crash (a signal) inside the user's Python code prints its Python stack, file and line, to
# the worker's stderr (the terminal) before the worker's own crash report, which runs next:
# faulthandler hands the signal on to the handler it replaced.
faulthandler.enable(all_threads=False)

def describe(exc, path):
    if isinstance(exc, SyntaxError) and exc.filename:
        return f"SyntaxError: {exc.msg} ({os.path.basename(exc.filename)}, line {exc.lineno})"
    text = " ".join(traceback.format_exception_only(type(exc), exc)).strip()
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if os.path.abspath(f.filename) == path]
    if frames:
        text += f" ({os.path.basename(path)}, line {frames[-1].lineno}: {frames[-1].line})"
    return text

def torch_lib():
    return os.path.realpath(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"))
)PY";

[[noreturn]] void fail(const std::string& message) { throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, message); }

// Holds the interpreter's lock for a scope, from any thread.
class Gil {
 public:
  Gil() : state_(PyGILState_Ensure()) {}
  ~Gil() { PyGILState_Release(state_); }
  Gil(const Gil&) = delete;
  Gil& operator=(const Gil&) = delete;

 private:
  PyGILState_STATE state_;
};

// An owned reference.
struct Ref {
  PyObject* p = nullptr;
  explicit Ref(PyObject* o = nullptr) : p(o) {}
  ~Ref() { Py_XDECREF(p); }
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
  Ref(Ref&& o) noexcept : p(o.p) { o.p = nullptr; }
  explicit operator bool() const { return p != nullptr; }
};

PyObject* helpers = nullptr;      // the kHelpers module (a reference kept for the process)
PyObject* user_module = nullptr;  // python/mlhost/user_module.py's module (the same)
std::string start_error;

// The pending Python exception as one line (helpers.describe), cleared.
std::string take_error(const std::string& path) {
  PyObject *type = nullptr, *value = nullptr, *trace = nullptr;
  PyErr_Fetch(&type, &value, &trace);
  PyErr_NormalizeException(&type, &value, &trace);
  if (value && trace) PyException_SetTraceback(value, trace);
  Ref t(type), v(value), tb(trace);
  std::string text = "unknown Python error";
  if (helpers && v) {
    Ref line(PyObject_CallMethod(helpers, "describe", "Os", v.p, path.c_str()));
    if (line && PyUnicode_Check(line.p)) text = PyUnicode_AsUTF8(line.p);
    PyErr_Clear();
  } else if (v) {
    Ref s(PyObject_Str(v.p));
    if (s) text = PyUnicode_AsUTF8(s.p);
    PyErr_Clear();
  }
  return text;
}

std::string import_helpers();

std::string start_interpreter() {
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  // The worker's own SIGINT/SIGTERM handlers stay: they stop and save the run.
  config.install_signal_handlers = 0;
  config.parse_argv = 0;
  // The virtual environment's python: its pyvenv.cfg puts the environment's site-packages
  // (this build's torch) on sys.path.
  PyStatus status = PyConfig_SetBytesString(&config, &config.program_name, MLH_PYTHON_EXECUTABLE);
  if (!PyStatus_Exception(status)) status = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(status))
    return std::string("the embedded Python (") + MLH_PYTHON_EXECUTABLE + ") does not start: " +
           (status.err_msg ? status.err_msg : "unknown error");
  const std::string error = import_helpers();
  PyEval_SaveThread();  // the lock is taken per call from now on
  return error;
}

// Imports the helpers and user_module.py (and so torch) and checks that torch is this
// process's LibTorch; the error, or "".
std::string import_helpers() {
  std::string error;
  Ref code(Py_CompileString(kHelpers, "<mlhost python_bridge>", Py_file_input));
  Ref module(code ? PyImport_ExecCodeModule("_mlhost_bridge", code.p) : nullptr);
  Ref builder_code(module ? Py_CompileString(kUserModuleSource, "<mlhost user_module.py>", Py_file_input) : nullptr);
  Ref builder(builder_code ? PyImport_ExecCodeModule("_mlhost_user_module", builder_code.p) : nullptr);
  if (!module || !builder) {
    error = std::string("the embedded Python (") + MLH_PYTHON_EXECUTABLE + ") cannot import torch: " +
            take_error("") +
            " (Python's torch needs the whole wheel with its CUDA libraries, even on a machine without a GPU: bash "
            "scripts/torch-venv.sh --full)";
  } else {
    helpers = module.p;
    Py_INCREF(helpers);
    user_module = builder.p;
    Py_INCREF(user_module);
    // Two LibTorch libraries in one process would each keep their own state: refuse.
    Dl_info info{};
    dladdr(reinterpret_cast<void*>(&at::globalContext), &info);
    const std::string ours = info.dli_fname ? fs::weakly_canonical(info.dli_fname).string() : "";
    Ref theirs(PyObject_CallMethod(helpers, "torch_lib", nullptr));
    const std::string theirs_path = theirs && PyUnicode_Check(theirs.p) ? PyUnicode_AsUTF8(theirs.p) : "?";
    if (ours != theirs_path)
      error = std::string("the embedded Python (") + MLH_PYTHON_EXECUTABLE + ") imports torch from " + theirs_path +
              ", not the LibTorch this build links (" + ours + "): build against that Python's torch";
  }
  return error;
}

class PythonModuleImpl final : public PythonModule {
 public:
  PythonModuleImpl(PyObject* module, PythonModuleSpec spec) : module_(module), spec_(std::move(spec)) {}
  ~PythonModuleImpl() override {
    Gil gil;
    Py_XDECREF(module_);
  }

  std::vector<at::Tensor> forward(const std::vector<at::Tensor>& inputs) override {
    Gil gil;
    Ref args(PyTuple_New(static_cast<Py_ssize_t>(inputs.size())));
    for (size_t i = 0; i < inputs.size(); ++i)
      PyTuple_SET_ITEM(args.p, static_cast<Py_ssize_t>(i), THPVariable_Wrap(inputs[i]));
    Ref result(PyObject_CallObject(module_, args.p));
    if (!result) fail(name() + ": forward raised " + take_error(spec_.file));
    std::vector<at::Tensor> out;
    if (THPVariable_Check(result.p)) {
      out.push_back(THPVariable_Unpack(result.p));
      return out;
    }
    if (!PyTuple_Check(result.p) && !PyList_Check(result.p))
      fail(name() + ": forward returned a " + Py_TYPE(result.p)->tp_name + ", not a tensor or a tuple of tensors");
    Ref items(PySequence_Fast(result.p, "a sequence"));
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(items.p);
    for (Py_ssize_t i = 0; i < n; ++i) {
      PyObject* item = PySequence_Fast_GET_ITEM(items.p, i);
      if (!THPVariable_Check(item))
        fail(name() + ": forward returned a tuple whose item " + std::to_string(i) + " is a " + Py_TYPE(item)->tp_name +
             ", not a tensor");
      out.push_back(THPVariable_Unpack(item));
    }
    return out;
  }

  void train(bool on) override {
    Gil gil;
    Ref r(PyObject_CallMethod(module_, "train", "O", on ? Py_True : Py_False));
    if (!r) fail(name() + ": train() raised " + take_error(spec_.file));
  }

  void share_tensors_with(torch::nn::Module& owner) override {
    Gil gil;
    share("named_parameters", owner, /*parameters=*/true);
    share("named_buffers", owner, /*parameters=*/false);
  }

  std::string name() const override { return spec_.file + ":" + spec_.class_name; }

 private:
  void share(const char* method, torch::nn::Module& owner, bool parameters) {
    Ref pairs(PyObject_CallMethod(module_, method, nullptr));
    Ref list(pairs ? PySequence_List(pairs.p) : nullptr);
    if (!list) fail(name() + ": " + method + "() raised " + take_error(spec_.file));
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list.p); ++i) {
      PyObject* pair = PyList_GET_ITEM(list.p, i);
      const std::string full = PyUnicode_AsUTF8(PyTuple_GET_ITEM(pair, 0));
      PyObject* value = PyTuple_GET_ITEM(pair, 1);
      if (!THPVariable_Check(value)) continue;  // a buffer set to None
      at::Tensor tensor = THPVariable_Unpack(value);
      // Walk or make the nested modules of the dotted name.
      torch::nn::Module* at_module = &owner;
      size_t start = 0;
      for (size_t dot = full.find('.'); dot != std::string::npos; start = dot + 1, dot = full.find('.', start)) {
        const std::string part = full.substr(start, dot - start);
        std::shared_ptr<torch::nn::Module> child;
        for (const auto& item : at_module->named_children())
          if (item.key() == part) child = item.value();
        if (!child) child = at_module->register_module(part, std::make_shared<torch::nn::Module>());
        at_module = child.get();
      }
      const std::string leaf = full.substr(start);
      if (at_module->named_parameters(false).contains(leaf) || at_module->named_buffers(false).contains(leaf))
        fail(name() + ": its tensor '" + full + "' has the name of one the algorithm adds; rename it");
      if (parameters) at_module->register_parameter(leaf, tensor, tensor.requires_grad());
      else at_module->register_buffer(leaf, tensor);
    }
  }

  PyObject* module_;
  PythonModuleSpec spec_;
};

}  // namespace

extern "C" __attribute__((visibility("default"))) PythonModule* mlhost_python_load(const PythonModuleSpec& spec) {
  static std::once_flag once;
  std::call_once(once, [] { start_error = start_interpreter(); });
  const std::string what = spec.file + ":" + spec.class_name;
  if (!start_error.empty()) fail(what + ": " + start_error);
  Gil gil;
  const std::string kwargs_text = spec.kwargs.dump();
  Ref json(PyImport_ImportModule("json"));
  Ref kwargs(json ? PyObject_CallMethod(json.p, "loads", "s", kwargs_text.c_str()) : nullptr);
  if (!kwargs) fail(what + ": its keyword arguments " + kwargs_text + " do not reach Python: " + take_error(spec.file));
  Ref built(PyObject_CallMethod(user_module, "build", "sO", what.c_str(), kwargs.p));
  if (!built) fail(what + ": " + take_error(spec.file));
  PyObject* module = built.p;
  built.p = nullptr;
  return new PythonModuleImpl(module, spec);
}
