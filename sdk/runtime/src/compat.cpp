// The non-inline parts of compat.hpp.
#include "mlh/runtime/compat.hpp"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/optim.h>
#include <torch/serialize/archive.h>

namespace mlh::rt::compat {

#if MLH_TORCH_VERSION_AT_LEAST(2, 0)
namespace {

using torch::serialize::InputArchive;

// Whether the archive's first parameter key is a 1.13 hex address.
bool has_hex_parameter_keys(InputArchive& archive) {
  InputArchive groups, first;
  c10::IValue key;
  return archive.try_read("param_groups", groups) && groups.try_read("param_groups/0", first) &&
         first.try_read("params/0", key) && key.isString() && key.toStringRef().rfind("0x", 0) == 0;
}

// What 2.x's torch::optim::serialize(InputArchive&, Optimizer&) does, with the keys compared as
// the strings they are.
template <typename State, typename Options>
void load_hex_keyed(torch::optim::Optimizer& optimizer, InputArchive& archive) {
  InputArchive state_archive;
  archive.read("state", state_archive);
  std::map<std::string, std::unique_ptr<State>> saved;
  for (const std::string& key : state_archive.keys()) {
    InputArchive one;
    state_archive.read(key, one);
    auto state = std::make_unique<State>();
    state->serialize(one);
    saved[key] = std::move(state);
  }
  InputArchive groups_archive;
  archive.read("param_groups", groups_archive);
  std::vector<std::pair<std::vector<std::string>, std::unique_ptr<torch::optim::OptimizerOptions>>> groups;
  torch::optim::detail::serialize<Options>(groups_archive, groups);
  TORCH_CHECK(groups.size() == optimizer.param_groups().size(),
              "loaded state dict has a different number of parameter groups");
  for (size_t i = 0; i < groups.size(); ++i) {
    const std::vector<std::string>& keys = groups[i].first;
    const std::vector<at::Tensor>& params = optimizer.param_groups()[i].params();
    TORCH_CHECK(keys.size() == params.size(),
                "loaded state dict contains a parameter group that has a different size than the optimizer's "
                "parameter group");
    for (size_t p = 0; p < params.size(); ++p) {
      auto it = saved.find(keys[p]);
      if (it != saved.end() && it->second) optimizer.state()[params[p].unsafeGetTensorImpl()] = std::move(it->second);
    }
    static_cast<Options&>(optimizer.param_groups()[i].options()) = static_cast<Options&>(*groups[i].second);
  }
}

}  // namespace
#endif

void load_optimizer(torch::optim::Optimizer& optimizer, torch::serialize::InputArchive& archive) {
#if MLH_TORCH_VERSION_AT_LEAST(2, 0)
  if (has_hex_parameter_keys(archive)) {
    using namespace torch::optim;
    if (dynamic_cast<AdamW*>(&optimizer)) return load_hex_keyed<AdamWParamState, AdamWOptions>(optimizer, archive);
    if (dynamic_cast<Adam*>(&optimizer)) return load_hex_keyed<AdamParamState, AdamOptions>(optimizer, archive);
    if (dynamic_cast<SGD*>(&optimizer)) return load_hex_keyed<SGDParamState, SGDOptions>(optimizer, archive);
    if (dynamic_cast<RMSprop*>(&optimizer)) return load_hex_keyed<RMSpropParamState, RMSpropOptions>(optimizer, archive);
    if (dynamic_cast<Adagrad*>(&optimizer)) return load_hex_keyed<AdagradParamState, AdagradOptions>(optimizer, archive);
    TORCH_CHECK(false, "this optimizer's state was saved by LibTorch 1.x, which LibTorch 2.x reads only for Adam, "
                       "AdamW, SGD, RMSprop and Adagrad");
  }
#endif
  optimizer.load(archive);
}

}  // namespace mlh::rt::compat
