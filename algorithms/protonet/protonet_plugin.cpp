// The ProtoNet algorithm plugin (Snell, Swersky, Zemel 2017, "Prototypical Networks for
// Few-shot Learning"): its description for the host and the dispatch to its commands.
#include <mlh/plugin.hpp>

#include "commands.hpp"
#include "config.hpp"
#include "data/decode.hpp"
#include "describe_run.hpp"

namespace {

class ProtoNet : public mlh::AlgorithmPlugin {
 public:
  mlh::AlgorithmDescription describe() override {
    mlh::AlgorithmDescription d;
    d.summary = "Prototypical Networks: few-shot image classification with a Conv-4 or ResNet-12 encoder";
    d.commands = protonet::command_table().names();
    d.config_schema_json = protonet::config_schema_json();
    d.config_defaults_json = protonet::config_defaults_json();
    d.presets_json = protonet::presets_json();
    return d;
  }

  void run(mlh::RunContext& ctx) override {
    protonet::run_command(ctx, protonet::load_dataset, protonet_decoder(), protonet::dataset_class_names);
  }

  std::string describe_run(const mlh::RunContext& ctx) override { return protonet::describe_run(ctx); }

 private:
  static protonet::ImageDecoder protonet_decoder() {
    return [](const std::vector<std::string>& files, const protonet::DatasetSpec& spec) {
      protonet::FilePlan plan;
      for (const std::string& f : files) plan.items.push_back({f, 0, 0});
      plan.class_names = {"query"};
      protonet::DecodeOptions options;
      options.channels = spec.channels;
      options.height = spec.height;
      options.width = spec.width;
      options.invert = spec.invert;
      return protonet::decode_plan(plan, options);
    };
  }
};

}  // namespace

MLH_ALGORITHM_PLUGIN(ProtoNet)
