#include "mlh/runtime/warm_start.hpp"

#include <fnmatch.h>

#include <torch/nn/module.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "mlh/plugin.hpp"
#include "mlh/runtime/checkpoint.hpp"
#include "mlh/runtime/safetensors.hpp"
#include "torch_save_reader.hpp"

namespace mlh::rt {
namespace {

[[noreturn]] void invalid(const std::string& path, const std::string& what) {
  throw Error(MLH_ERR_INVALID_ARGUMENT, "--init-from '" + path + "': " + what);
}

std::string shape_text(const at::Tensor& t) { return c10::str(t.sizes()); }

// The first `n` names, for messages about long lists.
std::string some(const std::vector<std::string>& names, size_t n = 4) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < n; ++i) out += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > n) out += " and " + std::to_string(names.size() - n) + " more";
  return out;
}

enum class Format { kSafetensors, kCheckpoint, kTorchZip, kUnknown };

Format sniff(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(MLH_ERR_IO, "--init-from '" + path + "': cannot open: " + std::strerror(errno));
  unsigned char head[9] = {};
  in.read(reinterpret_cast<char*>(head), sizeof head);
  if (in.gcount() < 9) return Format::kUnknown;
  if (std::memcmp(head, "MLHCKPT1", 8) == 0) return Format::kCheckpoint;
  if (std::memcmp(head, "PK\x03\x04", 4) == 0) return Format::kTorchZip;
  if (head[8] == '{') return Format::kSafetensors;  // u64 header length, then the JSON header
  return Format::kUnknown;
}

// Whether `pattern` names parameter `name`: the name itself, a prefix ending at a dot, or a glob.
bool names(const std::string& pattern, const std::string& name) {
  if (pattern == name) return true;
  if (name.size() > pattern.size() && name.compare(0, pattern.size(), pattern) == 0 && name[pattern.size()] == '.')
    return true;
  return pattern.find('*') != std::string::npos && ::fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

// The prefix to drop from the file's names so that most of the model's parameters are found:
// each file name is tried against the model's names at each of its dot boundaries.
std::string common_prefix(const std::map<std::string, at::Tensor>& file, const std::set<std::string>& model_names) {
  std::map<std::string, size_t> votes;
  for (const auto& [name, tensor] : file) {
    if (model_names.count(name)) ++votes[""];
    for (size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', dot + 1))
      if (model_names.count(name.substr(dot + 1))) ++votes[name.substr(0, dot + 1)];
  }
  std::string best;
  size_t best_votes = 0;
  for (const auto& [prefix, count] : votes)
    if (count > best_votes || (count == best_votes && prefix.size() < best.size())) best = prefix, best_votes = count;
  return best;
}

}  // namespace

WeightsFile read_weights_file(const std::string& path) {
  WeightsFile file{path, "", {}};
  switch (sniff(path)) {
    case Format::kSafetensors:
      file.format = "safetensors";
      file.tensors = load_safetensors(path);
      break;
    case Format::kCheckpoint:
      file.format = "mlhost checkpoint";
      file.tensors = read_checkpoint_module(path, "model");
      break;
    case Format::kTorchZip:
      file.format = "torch.save state dict";
      file.tensors = read_torch_save_tensors(path);
      break;
    case Format::kUnknown:
      invalid(path, "not a weights file mlhost reads (safetensors, an mlhost checkpoint, or a state dict written "
                    "by torch.save in its zip format)");
  }
  if (file.tensors.empty()) invalid(path, "the " + file.format + " holds no tensors");
  return file;
}

WarmStartReport load_weights_into(torch::nn::Module& model, const WeightsFile& file,
                                  const std::vector<std::string>& freeze, const WeightNameMap& rename) {
  const auto parameters = model.named_parameters(/*recurse=*/true);
  const auto buffers = model.named_buffers(/*recurse=*/true);
  std::set<std::string> model_names;
  for (const auto& p : parameters) model_names.insert(p.key());
  for (const auto& b : buffers) model_names.insert(b.key());

  std::map<std::string, at::Tensor> renamed;
  if (rename)
    for (const auto& [name, tensor] : file.tensors) renamed[rename(name)] = tensor;
  const std::map<std::string, at::Tensor>& tensors = rename ? renamed : file.tensors;

  WarmStartReport report;
  report.dropped_prefix = common_prefix(tensors, model_names);
  std::map<std::string, at::Tensor> mapped;
  for (const auto& [name, tensor] : tensors) {
    const std::string& prefix = report.dropped_prefix;
    if (name.compare(0, prefix.size(), prefix) == 0 && model_names.count(name.substr(prefix.size())))
      mapped[name.substr(prefix.size())] = tensor;
    else
      report.unused.push_back(name);
  }
  const std::string mapping = report.dropped_prefix.empty() ? "" : " (after dropping '" + report.dropped_prefix + "')";

  // Everything is checked before anything is copied: a file that does not fit changes nothing,
  // and every way it does not fit is named at once (a fix at a time would take a run each).
  std::vector<std::string> missing, problems;
  auto check = [&](const std::string& name, const at::Tensor& target, bool is_buffer) {
    const auto it = mapped.find(name);
    if (it == mapped.end()) {
      (is_buffer ? report.kept_buffers : missing).push_back(name);
      return;
    }
    if (it->second.sizes() != target.sizes())
      problems.push_back("tensor '" + name + "' is " + shape_text(it->second) + " in the file, " +
                         shape_text(target) + " in the model");
    if (it->second.is_floating_point() != target.is_floating_point())
      problems.push_back("tensor '" + name + "' is " + std::string(c10::toString(it->second.scalar_type())) +
                         " in the file, " + c10::toString(target.scalar_type()) + " in the model");
  };
  for (const auto& p : parameters) check(p.key(), p.value(), false);
  for (const auto& b : buffers) check(b.key(), b.value(), true);
  if (!missing.empty())
    problems.push_back("the " + file.format + " has no tensor for the model's parameter" +
                       (missing.size() > 1 ? "s " : " ") + some(missing) + mapping);
  if (!problems.empty()) {
    std::string text = problems.size() == 1 ? problems[0] : std::to_string(problems.size()) + " mismatches:";
    if (problems.size() > 1)
      for (const std::string& p : problems) text += "\n  " + p;
    if (!report.unused.empty()) text += "\n  tensors of the file the model has no place for: " + some(report.unused);
    if (!missing.empty())
      text += "\n  the file's names are " + some([&] {
                std::vector<std::string> n;
                for (const auto& [name, t] : tensors) n.push_back(name);
                return n;
              }());
    invalid(file.path, text);
  }
  std::vector<bool> pattern_used(freeze.size(), false);
  for (const auto& p : parameters)
    for (size_t i = 0; i < freeze.size(); ++i)
      if (names(freeze[i], p.key())) pattern_used[i] = true;
  for (size_t i = 0; i < freeze.size(); ++i)
    if (!pattern_used[i])
      invalid(file.path, "--freeze '" + freeze[i] + "' names no parameter of the model (names look like '" +
                             (parameters.is_empty() ? std::string() : parameters.begin()->key()) + "')");

  torch::NoGradGuard no_grad;
  for (auto* list : {&parameters, &buffers})
    for (const auto& item : *list) {
      const auto it = mapped.find(item.key());
      if (it == mapped.end()) continue;
      at::Tensor target = item.value();
      target.copy_(it->second.to(target.scalar_type()));
      ++report.loaded;
    }
  for (const auto& p : parameters)
    if (std::any_of(freeze.begin(), freeze.end(), [&](const std::string& f) { return names(f, p.key()); })) {
      p.value().set_requires_grad(false);
      report.frozen.push_back(p.key());
    }
  return report;
}

std::string WarmStartReport::describe() const {
  std::ostringstream out;
  out << loaded << " tensors";
  if (!dropped_prefix.empty()) out << " (names without the prefix '" << dropped_prefix << "')";
  if (!kept_buffers.empty()) out << "; buffers not in the file, kept as built: " << some(kept_buffers);
  if (!unused.empty()) out << "; tensors of the file the model has no place for: " << some(unused);
  if (!frozen.empty())
    out << "; frozen: " << frozen.size() << (frozen.size() == 1 ? " parameter (" : " parameters (") << some(frozen) << ")";
  return out.str();
}

}  // namespace mlh::rt
