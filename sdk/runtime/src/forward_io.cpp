#include "mlh/runtime/forward_io.hpp"

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <mlh/plugin.hpp>

#include "mlh/runtime/safetensors.hpp"

namespace mlh::rt {
namespace {

std::string sizes_text(at::IntArrayRef sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

std::string wanted_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + (shape[i] < 0 ? std::string("batch") : std::to_string(shape[i]));
  return s + "]";
}

std::string names_of(const std::vector<ForwardInput>& wanted) {
  std::string s;
  for (const ForwardInput& w : wanted) s += (s.empty() ? "" : ", ") + w.name;
  return s;
}

[[noreturn]] void bad_tensor(const std::string& path, const std::string& name, const std::string& what) {
  throw Error(MLH_ERR_INVALID_ARGUMENT, "forward.inputs '" + path + "': tensor '" + name + "' " + what);
}

// The tensor checked against `w`; `batch` is the batch size seen so far (-1: none yet).
at::Tensor checked(const std::string& path, const ForwardInput& w, const at::Tensor& t, int64_t& batch) {
  const std::string want = wanted_text(w.shape);
  if (t.dim() != static_cast<int64_t>(w.shape.size()))
    bad_tensor(path, w.name, "is " + sizes_text(t.sizes()) + ", want " + want);
  for (size_t i = 0; i < w.shape.size(); ++i) {
    const int64_t size = t.size(static_cast<int64_t>(i));
    if (w.shape[i] >= 0 && size != w.shape[i]) bad_tensor(path, w.name, "is " + sizes_text(t.sizes()) + ", want " + want);
    if (w.shape[i] < 0) {
      if (batch >= 0 && size != batch)
        bad_tensor(path, w.name, "has batch size " + std::to_string(size) + ", the other inputs " + std::to_string(batch));
      batch = size;
    }
  }
  const bool floating = at::isFloatingType(t.scalar_type());
  const bool integer = at::isIntegralType(t.scalar_type(), /*includeBool=*/false);
  if (w.kind == ForwardInput::Kind::kFloat && !floating)
    bad_tensor(path, w.name, "is " + std::string(c10::toString(t.scalar_type())) + ", want a floating-point dtype (F32)");
  if (w.kind == ForwardInput::Kind::kInteger && !integer)
    bad_tensor(path, w.name, "is " + std::string(c10::toString(t.scalar_type())) + ", want an integer dtype (I64 or I32)");
  return t.to(w.kind == ForwardInput::Kind::kFloat ? at::kFloat : at::kLong);
}

}  // namespace

std::map<std::string, at::Tensor> read_forward_inputs(const std::string& path, const std::vector<ForwardInput>& wanted) {
  if (path.empty())
    throw Error(MLH_ERR_INVALID_ARGUMENT,
                "forward: set forward.inputs to a safetensors file holding " + names_of(wanted));
  const std::map<std::string, at::Tensor> file = load_safetensors(path);  // names the file when unreadable
  std::map<std::string, at::Tensor> inputs;
  int64_t batch = -1;
  for (const ForwardInput& w : wanted) {
    const auto it = file.find(w.name);
    if (it == file.end()) {
      if (w.required) bad_tensor(path, w.name, "is missing: want " + wanted_text(w.shape));
      continue;
    }
    inputs[w.name] = checked(path, w, it->second, batch);
  }
  // A tensor the network does not take is likely a misspelt name: say so rather than ignore it.
  for (const auto& [name, tensor] : file)
    if (!inputs.count(name)) bad_tensor(path, name, "is not an input of this network (it takes " + names_of(wanted) + ")");
  return inputs;
}

std::string write_forward_outputs(mlh::RunContext& ctx, const std::map<std::string, at::Tensor>& outputs,
                                  const std::string& inputs_path, const std::map<std::string, std::string>& metadata,
                                  const std::string& summary) {
  std::map<std::string, at::Tensor> cpu;
  nlohmann::json shapes = nlohmann::json::object();
  std::string shown;
  for (const auto& [name, t] : outputs) {
    at::Tensor c = t.detach().to(at::kCPU);
    if (at::isFloatingType(c.scalar_type())) c = c.to(at::kFloat);
    cpu[name] = c.contiguous();
    shapes[name] = c.sizes().vec();
    shown += (shown.empty() ? "" : ", ") + name + " " + sizes_text(c.sizes());
  }
  std::map<std::string, std::string> meta = metadata;
  meta["inputs"] = inputs_path;
  const std::string path = ctx.run_dir() + "/outputs.safetensors";
  save_safetensors(cpu, path, meta);
  ctx.info("forward outputs (" + shown + "): " + path);
  nlohmann::json s = nlohmann::json::parse(summary);
  s["outputs"] = path;
  s["shapes"] = shapes;
  s["inputs"] = inputs_path;
  ctx.summary(s.dump());
  return path;
}

}  // namespace mlh::rt
