#include "mlh/runtime/trained_run.hpp"

#include <nlohmann/json.hpp>

#include <mlh/plugin.hpp>

namespace mlh::rt {

std::string trained_run_dir(const mlh::RunContext& ctx) {
  const nlohmann::json plan = nlohmann::json::parse(ctx.plan_json(), nullptr, /*allow_exceptions=*/false);
  if (plan.is_object()) {
    const auto it = plan.find("trained_run_dir");
    if (it != plan.end() && it->is_string() && !it->get<std::string>().empty()) return it->get<std::string>();
  }
  return ctx.run_dir();
}

}  // namespace mlh::rt
