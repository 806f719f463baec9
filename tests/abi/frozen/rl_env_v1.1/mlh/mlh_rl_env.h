/*
 * mlhost reinforcement-learning environment C ABI: how a shared library hands one
 * environment (Gymnasium's reset/step, for C and C++) to an algorithm such as PPO, which
 * loads it by path (config env=library, library.path=...) and runs many copies side by side.
 *
 * The rules are the plugin ABI's (mlh_abi.h): pure C, every struct starts with
 * uint32_t struct_size and only ever gains fields at its end, int32_t instead of bool, errors
 * are values (mlh_status + mlh_error, message written by the callee), never exceptions or
 * aborts; a function the environment has nothing for is NULL and the host never calls it.
 * One instance is called from one thread at a time; different instances may be called from
 * different threads, so instances share no unguarded state.
 *
 * The library exports one symbol, MLH_RL_ENV_ENTRY_SYMBOL, returning a table with static
 * lifetime. The host refuses a table whose abi_major is not its own. C++ authors write a
 * class and one macro instead (mlh/rl_env.hpp).
 *
 * Versions are negotiated through the table: the host speaks min(its minor, the table's
 * abi_minor), reads an appended table field only when that minor has it and the table's
 * struct_size holds it, and an environment writes an appended spec field only when the
 * spec's struct_size (the host's) holds it. So a library built against an older minor keeps
 * loading in a newer host, and a newer one in an older host as far as it needs nothing new.
 * docs/abi-changelog.md lists what each minor added; tests/abi/frozen/rl_env_v1.<minor>/ keeps
 * each released header.
 */
#ifndef MLH_RL_ENV_H
#define MLH_RL_ENV_H

#include "mlh_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MLH_RL_ENV_ABI_MAJOR 1
#define MLH_RL_ENV_ABI_MINOR 1
/* Observations have at most this many dimensions. */
#define MLH_RL_ENV_MAX_RANK 8
/* A continuous (box) action has at most this many values (since 1.1). */
#define MLH_RL_ENV_MAX_ACTION_DIM 64

#define MLH_RL_ENV_ENTRY_SYMBOL "mlh_rl_env_entry"

/* One environment instance, opaque to the host. */
typedef struct mlh_rl_env mlh_rl_env;

/* What an instance is, filled by describe(). The observation is observation_shape[0..rank)
 * floats, row-major. Actions are either discrete, the integers 0 .. num_actions-1 (step), or
 * continuous since 1.1: action_dim floats each within the bounds action_bounds gives
 * (step_continuous, Gymnasium's Box); an environment has one kind and leaves the other 0. */
typedef struct mlh_rl_env_spec {
  uint32_t struct_size;
  uint32_t observation_rank; /* 1 .. MLH_RL_ENV_MAX_RANK */
  int64_t observation_shape[MLH_RL_ENV_MAX_RANK];
  int32_t num_actions; /* >= 1 for discrete actions, 0 for continuous ones */
  /* Since 1.1 (write it only where struct_size holds it): 1 .. MLH_RL_ENV_MAX_ACTION_DIM for
   * continuous actions, 0 for discrete ones. */
  int32_t action_dim;
} mlh_rl_env_spec;

/* The outcome of one step, as Gymnasium's: terminated = the episode ended by the
 * environment's own rules (the value after it is 0); truncated = cut off by a time limit
 * (the value is not 0: the learner bootstraps from the observation). Extra info: solved (a
 * goal reached, counted in solve rates) and invalid_move (the action changed nothing). */
typedef struct mlh_rl_env_step {
  uint32_t struct_size;
  float reward;
  int32_t terminated;
  int32_t truncated;
  int32_t solved;
  int32_t invalid_move;
} mlh_rl_env_step;

typedef struct mlh_rl_env_table {
  uint32_t struct_size;
  uint32_t abi_major; /* MLH_RL_ENV_ABI_MAJOR of the header the library was built with */
  uint32_t abi_minor;
  const char* name;   /* the environment's name, e.g. "grid-world" */

  /* Makes an instance from the environment's own settings, a JSON object as text ("{}" when
   * the config gives none). A bad setting: MLH_ERR_INVALID_ARGUMENT and a message naming it. */
  mlh_status (*create)(const char* settings_json, mlh_rl_env** out, mlh_error* error);
  void (*destroy)(mlh_rl_env* env);
  mlh_status (*describe)(const mlh_rl_env* env, mlh_rl_env_spec* out, mlh_error* error);
  /* Starts an episode from `seed` (the same seed gives the same episode) and writes its first
   * observation. The host draws each reset's seed from the instance's own seeded stream. */
  mlh_status (*reset)(mlh_rl_env* env, uint64_t seed, float* observation, mlh_error* error);
  /* Takes `action` and writes the observation after it (the last one when the episode ended:
   * the host resets). */
  mlh_status (*step)(mlh_rl_env* env, int32_t action, float* observation, mlh_rl_env_step* out, mlh_error* error);

  /* Optional (NULL: every action is always valid). 1 for the actions that are valid now,
   * 0 for the others; num_actions bytes. Policies may mask with it. */
  mlh_status (*action_mask)(const mlh_rl_env* env, uint8_t* mask, mlh_error* error);
  /* Optional (NULL or size 0: none): the running episode's state as numbers, for checkpoints
   * that resume exactly. Writes at most `capacity` values to `values` (NULL asks the size)
   * and the full size to *size. */
  mlh_status (*snapshot)(const mlh_rl_env* env, double* values, uint64_t capacity, uint64_t* size, mlh_error* error);
  /* Puts back what snapshot wrote (optional with snapshot). */
  mlh_status (*restore)(mlh_rl_env* env, const double* values, uint64_t size, mlh_error* error);

  /* Since 1.1, both set for continuous actions (NULL for discrete ones). */
  /* The bounds of each of the action_dim values: low[i] <= high[i]; +-INFINITY for none. */
  mlh_status (*action_bounds)(const mlh_rl_env* env, float* low, float* high, mlh_error* error);
  /* step with a continuous action of action_dim floats, within the bounds (the host clips). */
  mlh_status (*step_continuous)(mlh_rl_env* env, const float* action, float* observation, mlh_rl_env_step* out,
                                mlh_error* error);
} mlh_rl_env_table;

/* The entry symbol: returns the library's table (static lifetime), never NULL. */
typedef const mlh_rl_env_table* (*mlh_rl_env_entry_fn)(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MLH_RL_ENV_H */
