/* An environment library written in C against the frozen environment ABI 1.0 header
 * (tests/abi/frozen/rl_env_v1.0): what a library built before 1.1 looks like to a newer host.
 * A chain of 6 cells: start in cell 1, actions 0 (left) and 1 (right); reaching cell 5 ends
 * the episode with reward 1, every other step costs 0.01; cut off after 20 steps. The
 * observation is the position as one-hot over the 6 cells. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlh/mlh_rl_env.h>

#if MLH_RL_ENV_ABI_MINOR != 0
#error "built against the frozen 1.0 header: check the include path"
#endif

enum { kCells = 6, kGoal = 5, kMaxSteps = 20 };

struct mlh_rl_env {
  int position, steps;
};

static void write_observation(const mlh_rl_env* env, float* observation) {
  for (int i = 0; i < kCells; ++i) observation[i] = i == env->position ? 1.0f : 0.0f;
}

static mlh_status fail(mlh_error* error, const char* message) {
  if (error) {
    error->code = MLH_ERR_INVALID_ARGUMENT;
    snprintf(error->message, sizeof error->message, "%s", message);
  }
  return MLH_ERR_INVALID_ARGUMENT;
}

static mlh_status create(const char* settings_json, mlh_rl_env** out, mlh_error* error) {
  if (settings_json && strcmp(settings_json, "{}") != 0) return fail(error, "the chain takes no settings");
  *out = calloc(1, sizeof(mlh_rl_env));
  return *out ? MLH_OK : fail(error, "out of memory");
}

static void destroy(mlh_rl_env* env) { free(env); }

static mlh_status describe(const mlh_rl_env* env, mlh_rl_env_spec* out, mlh_error* error) {
  (void)env;
  (void)error;
  out->observation_rank = 1;
  out->observation_shape[0] = kCells;
  out->num_actions = 2;
  return MLH_OK;
}

static mlh_status reset(mlh_rl_env* env, uint64_t seed, float* observation, mlh_error* error) {
  (void)seed;
  (void)error;
  env->position = 1;
  env->steps = 0;
  write_observation(env, observation);
  return MLH_OK;
}

static mlh_status step(mlh_rl_env* env, int32_t action, float* observation, mlh_rl_env_step* out, mlh_error* error) {
  if (action != 0 && action != 1) return fail(error, "actions are 0 and 1");
  env->position += action == 1 ? 1 : -1;
  if (env->position < 0) env->position = 0;
  ++env->steps;
  out->terminated = env->position == kGoal;
  out->truncated = !out->terminated && env->steps >= kMaxSteps;
  out->reward = out->terminated ? 1.0f : -0.01f;
  out->solved = out->terminated;
  out->invalid_move = 0;
  write_observation(env, observation);
  return MLH_OK;
}

static mlh_status snapshot(const mlh_rl_env* env, double* values, uint64_t capacity, uint64_t* size,
                           mlh_error* error) {
  (void)error;
  *size = 2;
  if (values && capacity >= 2) {
    values[0] = env->position;
    values[1] = env->steps;
  }
  return MLH_OK;
}

static mlh_status restore(mlh_rl_env* env, const double* values, uint64_t size, mlh_error* error) {
  if (size != 2) return fail(error, "a chain snapshot has 2 values");
  env->position = (int)values[0];
  env->steps = (int)values[1];
  return MLH_OK;
}

MLH_EXPORT const mlh_rl_env_table* mlh_rl_env_entry(void) {
  static const mlh_rl_env_table table = {sizeof(mlh_rl_env_table), MLH_RL_ENV_ABI_MAJOR, MLH_RL_ENV_ABI_MINOR,
                                         "chain-v1.0", create, destroy, describe, reset, step, NULL, snapshot,
                                         restore};
  return &table;
}
