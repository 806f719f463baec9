// The runtime's side of Python modules: the config value's parsing, and finding and loading
// the bridge library (python/python_bridge.cpp) that embeds the interpreter.
#include "mlh/runtime/python_module.hpp"

#include <dlfcn.h>

#include <filesystem>
#include <mutex>

#include <mlh/plugin.hpp>

namespace mlh::rt {

namespace fs = std::filesystem;

namespace {

// Where the bridge is: beside the plugin's folder as installed (PREFIX/lib/mlhost/plugins/x.so
// and PREFIX/lib/libmlhost_python.so, the build tree's layout too), else where this build
// made or installs it. Empty where this build has none.
std::vector<fs::path> bridge_candidates() {
  std::vector<fs::path> out;
#ifdef MLH_RT_PYTHON_BRIDGE
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&bridge_candidates), &info) && info.dli_fname)
    out.push_back(fs::path(info.dli_fname).parent_path() / "../../libmlhost_python.so");
  out.push_back(MLH_RT_PYTHON_BRIDGE);
  out.push_back(MLH_RT_PYTHON_BRIDGE_INSTALLED);
#endif
  return out;
}

using LoadFunction = PythonModule* (*)(const PythonModuleSpec&);

struct Bridge {
  LoadFunction load = nullptr;
  std::string why_not;  // "" once loaded
};

const Bridge& bridge() {
  static Bridge b;
  static std::once_flag once;
  std::call_once(once, [] {
    const std::vector<fs::path> candidates = bridge_candidates();
    if (candidates.empty()) {
      b.why_not =
          "this build's LibTorch has no Python half (libtorch_python: Debian's LibTorch 1.13 and a bare libtorch zip "
          "have none), so it cannot run a network written in Python; build with PyPI's torch wheel (bash "
          "scripts/build.sh) to train one";
      return;
    }
    std::string tried;
    for (const fs::path& p : candidates) {
      std::error_code ec;
      if (!fs::exists(p, ec)) {
        tried += (tried.empty() ? "" : ", ") + p.lexically_normal().string();
        continue;
      }
      // RTLD_GLOBAL: the extension modules Python imports (torch._C) find libpython's symbols
      // in the process's global scope, as they do in the python program.
      void* handle = dlopen(p.c_str(), RTLD_NOW | RTLD_GLOBAL);
      if (!handle) {
        const char* e = dlerror();
        b.why_not = std::string("the Python bridge ") + p.lexically_normal().string() + " does not load: " +
                    (e ? e : "unknown error") +
                    " (Python's torch needs the whole wheel with its CUDA libraries, even on a machine without a "
                    "GPU: bash scripts/torch-venv.sh --full)";
        return;
      }
      b.load = reinterpret_cast<LoadFunction>(dlsym(handle, "mlhost_python_load"));
      if (!b.load) b.why_not = "the Python bridge " + p.string() + " has no mlhost_python_load: it is not mlhost's";
      return;
    }
    b.why_not = "the Python bridge libmlhost_python.so is not installed (looked in " + tried + ")";
  });
  return b;
}

[[noreturn]] void invalid(const std::string& field, const std::string& value, const std::string& why) {
  throw Error(MLH_ERR_INVALID_ARGUMENT, "config field '" + field + "': '" + value + "' " + why);
}

}  // namespace

PythonModuleSpec parse_python_module(const std::string& field, const std::string& value) {
  const size_t colon = value.rfind(':');
  if (colon == std::string::npos || colon + 1 == value.size())
    invalid(field, value, "names no class: write path/to/file.py:ClassName");
  PythonModuleSpec spec{value.substr(0, colon), value.substr(colon + 1), nlohmann::json::object()};
  if (fs::path(spec.file).extension() != ".py") invalid(field, value, "is not a .py file followed by :ClassName");
  std::error_code ec;
  if (!fs::is_regular_file(spec.file, ec)) invalid(field, value, "names a file that does not exist: " + spec.file);
  for (char c : spec.class_name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
      invalid(field, value, "has a class name that is not a Python name: '" + spec.class_name + "'");
  return spec;
}

std::string python_modules_unavailable() { return bridge().why_not; }

std::unique_ptr<PythonModule> load_python_module(const PythonModuleSpec& spec) {
  const Bridge& b = bridge();
  if (!b.load) throw Error(MLH_ERR_INVALID_ARGUMENT, spec.file + ":" + spec.class_name + ": " + b.why_not);
  return std::unique_ptr<PythonModule>(b.load(spec));
}

std::string shape_text(const at::Tensor& t) {
  if (!t.defined()) return "an undefined tensor";
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

}  // namespace mlh::rt
