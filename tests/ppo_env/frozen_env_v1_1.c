/* An environment library of continuous actions written in C against the frozen environment
 * ABI 1.1 header (tests/abi/frozen/rl_env_v1.1): what a library built for 1.1 looks like to
 * every later host. A point on a line starts at a position drawn from the reset's seed in
 * [-1, 1]; an action in [-1, 1] moves it by a tenth of that; each step's reward is minus its
 * distance from 0; cut off after 20 steps. The observation is the position. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlh/mlh_rl_env.h>

#if MLH_RL_ENV_ABI_MINOR != 1
#error "built against the frozen 1.1 header: check the include path"
#endif

enum { kMaxSteps = 20 };

struct mlh_rl_env {
  float position;
  int steps;
};

static mlh_status fail(mlh_error* error, const char* message) {
  if (error) {
    error->code = MLH_ERR_INVALID_ARGUMENT;
    snprintf(error->message, sizeof error->message, "%s", message);
  }
  return MLH_ERR_INVALID_ARGUMENT;
}

static mlh_status create(const char* settings_json, mlh_rl_env** out, mlh_error* error) {
  if (settings_json && strcmp(settings_json, "{}") != 0) return fail(error, "the line takes no settings");
  *out = calloc(1, sizeof(mlh_rl_env));
  return *out ? MLH_OK : fail(error, "out of memory");
}

static void destroy(mlh_rl_env* env) { free(env); }

static mlh_status describe(const mlh_rl_env* env, mlh_rl_env_spec* out, mlh_error* error) {
  (void)env;
  (void)error;
  out->observation_rank = 1;
  out->observation_shape[0] = 1;
  out->num_actions = 0;
  /* Written only where the host's spec holds it (a 1.0 host's does not). */
  if (out->struct_size >= offsetof(mlh_rl_env_spec, action_dim) + sizeof out->action_dim) out->action_dim = 1;
  return MLH_OK;
}

static mlh_status reset(mlh_rl_env* env, uint64_t seed, float* observation, mlh_error* error) {
  (void)error;
  env->position = (float)((double)(seed % 2001) / 1000.0 - 1.0);
  env->steps = 0;
  observation[0] = env->position;
  return MLH_OK;
}

/* Every table has step; an environment of continuous actions refuses a discrete one. */
static mlh_status step(mlh_rl_env* env, int32_t action, float* observation, mlh_rl_env_step* out, mlh_error* error) {
  (void)env;
  (void)action;
  (void)observation;
  (void)out;
  return fail(error, "the line takes continuous actions (step_continuous)");
}

static mlh_status step_continuous(mlh_rl_env* env, const float* action, float* observation, mlh_rl_env_step* out,
                                  mlh_error* error) {
  if (!(action[0] >= -1.0f && action[0] <= 1.0f)) return fail(error, "the action must be within [-1, 1]");
  env->position += 0.1f * action[0];
  ++env->steps;
  out->reward = -fabsf(env->position);
  out->terminated = 0;
  out->truncated = env->steps >= kMaxSteps;
  out->solved = 0;
  out->invalid_move = 0;
  observation[0] = env->position;
  return MLH_OK;
}

static mlh_status action_bounds(const mlh_rl_env* env, float* low, float* high, mlh_error* error) {
  (void)env;
  (void)error;
  low[0] = -1.0f;
  high[0] = 1.0f;
  return MLH_OK;
}

MLH_EXPORT const mlh_rl_env_table* mlh_rl_env_entry(void) {
  static const mlh_rl_env_table table = {sizeof(mlh_rl_env_table), MLH_RL_ENV_ABI_MAJOR, MLH_RL_ENV_ABI_MINOR,
                                         "line-v1.1", create, destroy, describe, reset, step, NULL, NULL,
                                         NULL, action_bounds, step_continuous};
  return &table;
}
