// ppo's calibrate command: whole training iterations of the run's own task and network under
// the plan's settings.
#include <cstdint>

#include <mlh/runtime/calibration.hpp>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "tasks.hpp"
#include "trainer.hpp"

namespace ppo {

using nlohmann::json;

// calibrate: whole training iterations (collect a rollout, then the PPO update) of the
// config's task and network, with the plan's settings (mlh/runtime/calibration.hpp). No
// reduced-precision check: the host keeps PPO in fp32.
void calibrate(mlh::RunContext& ctx, const Config& user_cfg, const mlh::rt::RuntimePlan& plan) {
  const auto request = mlh::rt::CalibrationRequest::parse(ctx.plan_json());
  Config cfg = user_cfg;
  cfg.total_timesteps = int64_t{1} << 40;  // the LR schedule stays positive
  Trainer t(cfg, plan, make_task(cfg));
  const json measured = mlh::rt::time_calibration_step(cfg.env + "_iteration", [&] { t.iterate(); },
                                                       static_cast<double>(cfg.batch_size()), "env_steps",
                                                       plan.device, request);
  ctx.summary(json{{"calibration", measured}}.dump());
}

}  // namespace ppo
