/* The environment ABI's lock, checked at compile time in strict C11 as abi_static_c11.c does
 * for the plugin ABI: the header compiles as C, every field keeps its type, and on LP64 every
 * struct its size and alignment and every field its offset and size (rl_env_layout_lp64.def).
 * Compiled against the current header and against each frozen copy (frozen/rl_env_v1.<minor>),
 * so a library built against an older release keeps the layout the host reads. */
#include <stddef.h>
#include <stdint.h>

#include <mlh/mlh_rl_env.h>

/* Function pointer and array types, one macro argument each; their signatures are locked too. */
typedef int64_t mlh_rl_env_t_shape[MLH_RL_ENV_MAX_RANK];
typedef mlh_status (*mlh_rl_env_t_create_fn)(const char* settings_json, mlh_rl_env** out, mlh_error* error);
typedef void (*mlh_rl_env_t_destroy_fn)(mlh_rl_env* env);
typedef mlh_status (*mlh_rl_env_t_describe_fn)(const mlh_rl_env* env, mlh_rl_env_spec* out, mlh_error* error);
typedef mlh_status (*mlh_rl_env_t_reset_fn)(mlh_rl_env* env, uint64_t seed, float* observation, mlh_error* error);
typedef mlh_status (*mlh_rl_env_t_step_fn)(mlh_rl_env* env, int32_t action, float* observation, mlh_rl_env_step* out,
                                           mlh_error* error);
typedef mlh_status (*mlh_rl_env_t_action_mask_fn)(const mlh_rl_env* env, uint8_t* mask, mlh_error* error);
typedef mlh_status (*mlh_rl_env_t_snapshot_fn)(const mlh_rl_env* env, double* values, uint64_t capacity,
                                               uint64_t* size, mlh_error* error);
typedef mlh_status (*mlh_rl_env_t_restore_fn)(mlh_rl_env* env, const double* values, uint64_t size,
                                              mlh_error* error);
typedef mlh_status (*mlh_rl_env_t_action_bounds_fn)(const mlh_rl_env* env, float* low, float* high, mlh_error* error);
typedef mlh_status (*mlh_rl_env_t_step_continuous_fn)(mlh_rl_env* env, const float* action, float* observation,
                                                      mlh_rl_env_step* out, mlh_error* error);

#if MLH_RL_ENV_ABI_MINOR >= 1
#define MLH_RL_ENV_SINCE_1(row) row
#else
#define MLH_RL_ENV_SINCE_1(row)
#endif

_Static_assert(MLH_RL_ENV_ABI_MAJOR == 1, "MLH_RL_ENV_ABI_MAJOR must stay 1");
_Static_assert(MLH_RL_ENV_MAX_RANK == 8, "MLH_RL_ENV_MAX_RANK must stay 8");
_Static_assert(sizeof(MLH_RL_ENV_ENTRY_SYMBOL) == sizeof("mlh_rl_env_entry"),
               "MLH_RL_ENV_ENTRY_SYMBOL must stay \"mlh_rl_env_entry\"");
#if MLH_RL_ENV_ABI_MINOR >= 1
_Static_assert(MLH_RL_ENV_MAX_ACTION_DIM == 64, "MLH_RL_ENV_MAX_ACTION_DIM must stay 64");
#endif

/* Field types, on every target. */
#define MLH_ABI_STRUCT(T, size_, align_)
#define MLH_ABI_GROWN(T, minor, size_)
#define MLH_ABI_FIELD(T, f, off_, size_, ftype) \
  _Static_assert(_Generic(&((T*)0)->f, ftype*: 1, default: 0), "ABI field " #T "." #f " must keep type " #ftype);
#include "rl_env_layout_lp64.def"
#undef MLH_ABI_STRUCT
#undef MLH_ABI_GROWN
#undef MLH_ABI_FIELD

/* LP64 layout: a struct is at least its released size and exactly its size since the last
 * minor that grew it, when this header has that minor. */
#if defined(__LP64__) || defined(_LP64)
#define MLH_ABI_STRUCT(T, size_, align_)                                               \
  _Static_assert(sizeof(T) >= (size_), "sizeof(" #T ") must stay at least " #size_); \
  _Static_assert(_Alignof(T) == (align_), "_Alignof(" #T ") must stay " #align_);
#define MLH_ABI_GROWN(T, minor, size_) \
  _Static_assert(sizeof(T) == (size_), "sizeof(" #T ") since 1." #minor " must be " #size_);
#define MLH_ABI_FIELD(T, f, off_, size_, ftype)                                           \
  _Static_assert(offsetof(T, f) == (off_), "offsetof(" #T ", " #f ") must stay " #off_); \
  _Static_assert(sizeof(((T*)0)->f) == (size_), "sizeof(" #T "." #f ") must stay " #size_);
#include "rl_env_layout_lp64.def"
#undef MLH_ABI_STRUCT
#undef MLH_ABI_GROWN
#undef MLH_ABI_FIELD
#if MLH_RL_ENV_ABI_MINOR == 0
_Static_assert(sizeof(mlh_rl_env_table) == 88, "a 1.0 table is 88 bytes");
#endif
#endif

/* Something to link: the C++ test calls it, so this object is part of the test binary. */
int mlh_rl_env_abi_minor_checked(void) { return MLH_RL_ENV_ABI_MINOR; }
