// Environment libraries that misbehave (or have an unusual shape), one per BAD_ENV_KIND (tests/ppo_env/CMakeLists.txt
// builds each as its own .so), for the loader's error paths (library_env_test.cpp) and the
// host's (tests/ppo/host_test.cpp). Each is a working 3-float, 2-action environment until its
// fault: on step BAD_ENV_AT of an instance (counted across its episodes).
//   throw_step  step throws std::runtime_error("the simulator diverged")
//   throw_late  the same on step 600 (after a run's first checkpoints)
//   throw_reset reset throws std::runtime_error("no level to start")
//   nan_obs     step writes NaN into observation[1]
//   nan_late    the same on step 600 (after a run's first metrics and checkpoints)
//   segv        step writes through a null pointer on step 600 (a crash: SIGSEGV)
//   inf_reward  step returns an infinite reward
//   overrun     step writes one float past the observation
//   shapes      the second instance has shape {4}
//   planes      no fault: observations of shape {2, 3, 3} (for the network checks)
//   rank2       no fault but observations of shape {3, 3}, which no PPO network takes
//   wrong_abi   the table says ABI 2.0
//   no_entry    exports no entry symbol at all
#include <cmath>
#include <limits>
#include <stdexcept>

#include <mlh/rl_env.hpp>

#ifndef BAD_ENV_AT
#define BAD_ENV_AT 5
#endif

namespace {

const std::string kKind = BAD_ENV_KIND;

// A write through a null pointer the compiler cannot prove null, as a buggy simulator makes.
volatile int* volatile g_nowhere = nullptr;
__attribute__((noinline)) void crash() { *g_nowhere = 1; }
int instances = 0;

class BadEnv final : public mlh::Environment {
 public:
  BadEnv() : size_(kKind == "shapes" && instances++ > 0 ? 4 : 3) {
    if (kKind == "planes") shape_ = {2, 3, 3};
    else if (kKind == "rank2") shape_ = {3, 3};
    else shape_ = {size_};
    size_ = 1;
    for (int64_t d : shape_) size_ *= d;
  }
  std::string name() const override { return "bad-" + kKind; }
  std::vector<int64_t> observation_shape() const override { return shape_; }
  int num_actions() const override { return 2; }
  void reset(std::mt19937_64& rng, float* observation) override {
    if (kKind == "throw_reset") throw std::runtime_error("no level to start");
    for (int64_t i = 0; i < size_; ++i) observation[i] = float(rng() % 7) / 7.0f;
    episode_ = 0;
  }
  mlh::StepResult step(int action, float* observation) override {
    ++steps_;
    ++episode_;
    for (int64_t i = 0; i < size_; ++i) observation[i] = float(action + i) * 0.25f;
    mlh::StepResult r;
    r.reward = 1.0f;
    r.truncated = episode_ >= 4;
    if (steps_ == BAD_ENV_AT) {
      if (kKind == "throw_step" || kKind == "throw_late") throw std::runtime_error("the simulator diverged");
      if (kKind == "nan_obs" || kKind == "nan_late") observation[1] = std::numeric_limits<float>::quiet_NaN();
      if (kKind == "segv") crash();
      if (kKind == "inf_reward") r.reward = std::numeric_limits<float>::infinity();
      if (kKind == "overrun") observation[size_] = 1.0f;
    }
    return r;
  }

 private:
  int64_t size_;  // observation floats
  std::vector<int64_t> shape_;
  int steps_ = 0, episode_ = 0;
};

}  // namespace

#if defined(BAD_ENV_WRONG_ABI)
extern "C" MLH_EXPORT const mlh_rl_env_table* mlh_rl_env_entry(void) {
  static mlh_rl_env_table t = *::mlh::detail::RlEnvTable<BadEnv>::table("bad-wrong_abi");
  t.abi_major = 2;
  t.abi_minor = 0;
  return &t;
}
#elif !defined(BAD_ENV_NO_ENTRY)
MLH_RL_ENV(BadEnv, "bad-env")
#endif
