// The answer of an algorithm's describe_run (ABI 1.1; AlgorithmPlugin::describe_run): the model
// a run with this config and plan builds, and what the algorithm does with each plan field it
// reads. The host prints the model with the plan and marks every value the algorithm does not
// use as "no effect" (docs/plan.md, "What each field does"; docs/plugin-guide.md):
//
//   std::string describe_run(const mlh::RunContext& ctx) override {
//     mlh::RunDescription d;
//     d.model(net->parameter_count(), "4 blocks x 64 channels");
//     d.uses("precision", "autocast for the forward pass");
//     d.no_effect("batch_size", "the batch is the episode");
//     return d.json();
//   }
//
// A plan field the answer does not name counts as unused. The fields the runtime applies for
// every algorithm that calls apply_plan (threads, deterministic, tf32_matmul, memory limits)
// and those of the worker's environment (allocator, OpenMP) need no entry.
#ifndef MLH_RUN_DESCRIPTION_HPP
#define MLH_RUN_DESCRIPTION_HPP

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace mlh {

class RunDescription {
 public:
  // The model's size: its parameter count and its shape in the algorithm's own terms
  // ("30 blocks x 192 channels", "hidden 512, 8 heads, 2 layers").
  RunDescription& model(int64_t parameters, const std::string& shape) {
    answer_["model"] = {{"parameters", parameters}, {"shape", shape}};
    return *this;
  }
  // The plan field `field` takes effect: `what` it does.
  RunDescription& uses(const std::string& field, const std::string& what) {
    answer_["plan_fields"][field] = what;
    return *this;
  }
  // The plan field `field` does nothing in this run: `why`.
  RunDescription& no_effect(const std::string& field, const std::string& why) {
    answer_["plan_fields"][field] = {{"no_effect", why}};
    return *this;
  }
  // The work the run does, counted in the unit its calibrate command's throughput counts
  // (episodes, env_steps, samples) and with the plan's max_steps applied: with a calibration
  // the host says how long the run will take before it starts, and warns when over an hour.
  // `shorten`: the config fields that shorten it ("epochs or episodes_per_epoch");
  // `max_seconds`: a time limit of the config's own that ends it sooner (0: none).
  RunDescription& work(double amount, const std::string& unit, const std::string& shorten, double max_seconds = 0) {
    answer_["work"] = {{"amount", amount}, {"unit", unit}, {"shorten", shorten}, {"max_seconds", max_seconds}};
    return *this;
  }
  // uses() when `applies`, else no_effect(field, why_not): e.g. a field only training reads.
  RunDescription& uses_if(bool applies, const std::string& field, const std::string& what, const std::string& why_not) {
    return applies ? uses(field, what) : no_effect(field, why_not);
  }
  std::string json() const { return answer_.dump(); }

 private:
  nlohmann::json answer_ = {{"plan_fields", nlohmann::json::object()}};
};

}  // namespace mlh

#endif  // MLH_RUN_DESCRIPTION_HPP
