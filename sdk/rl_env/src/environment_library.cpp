#include "mlh/rl/environment_library.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <mlh/plugin.hpp>

namespace mlh::rl {

namespace {

constexpr int64_t kGuardBand = 16;
// What the guard band holds before each call: a NaN payload no arithmetic produces.
constexpr uint32_t kGuardBits = 0x7fc0dead;

float guard_value() {
  float f;
  std::memcpy(&f, &kGuardBits, sizeof f);
  return f;
}

bool is_guard(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits == kGuardBits;
}

mlh::Error load_error(const std::string& path, const std::string& config_field, const std::string& problem) {
  return mlh::Error(MLH_ERR_INVALID_ARGUMENT,
                    "environment library '" + path + "' (config field '" + config_field + "'): " + problem);
}

mlh_error empty_error() {
  mlh_error e{};
  e.struct_size = sizeof e;
  return e;
}

}  // namespace

EnvLibrary::EnvLibrary(std::string path, void* handle, const mlh_rl_env_table* table)
    : path_(std::move(path)), handle_(handle), table_(table) {}

EnvLibrary::~EnvLibrary() {
  if (handle_) dlclose(handle_);
}

std::shared_ptr<const EnvLibrary> EnvLibrary::open(const std::string& path, const std::string& config_field) {
  if (path.empty())
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT,
                     "config field '" + config_field + "': no environment library given: set it to the library's .so file");
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) throw load_error(path, config_field, "no such file");
  // RTLD_LOCAL: two environment libraries may define the same symbols without meeting.
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    throw load_error(path, config_field, std::string("cannot be loaded: ") + (why ? why : "unknown error"));
  }
  auto entry = reinterpret_cast<mlh_rl_env_entry_fn>(dlsym(handle, MLH_RL_ENV_ENTRY_SYMBOL));
  const mlh_rl_env_table* table = entry ? entry() : nullptr;
  auto refuse = [&](const std::string& problem) {
    dlclose(handle);
    return load_error(path, config_field, problem);
  };
  if (!entry)
    throw refuse("not an mlhost environment: it exports no " MLH_RL_ENV_ENTRY_SYMBOL
                 " (write the environment with mlh/rl_env.hpp and MLH_RL_ENV, or the C table of mlh/mlh_rl_env.h)");
  if (!table || !MLH_HAS_FIELD(table, mlh_rl_env_table, abi_minor)) throw refuse(MLH_RL_ENV_ENTRY_SYMBOL " returned no table");
  if (table->abi_major != MLH_RL_ENV_ABI_MAJOR)
    throw refuse("it speaks environment ABI " + std::to_string(table->abi_major) + "." +
                 std::to_string(table->abi_minor) + ", this host speaks " + std::to_string(MLH_RL_ENV_ABI_MAJOR) +
                 ".x: rebuild it against this mlhost's SDK");
  if (!MLH_HAS_FIELD(table, mlh_rl_env_table, restore) || !table->create || !table->destroy || !table->describe ||
      !table->reset || !table->step)
    throw refuse("its table lacks one of create, destroy, describe, reset and step (every environment has them)");
  if (!table->snapshot != !table->restore) throw refuse("its table has one of snapshot and restore without the other");
  return std::shared_ptr<const EnvLibrary>(new EnvLibrary(path, handle, table));
}

uint32_t EnvLibrary::minor() const { return std::min<uint32_t>(MLH_RL_ENV_ABI_MINOR, table_->abi_minor); }

bool EnvLibrary::has_continuous_actions() const {
  return minor() >= 1 && MLH_HAS_FIELD(table_, mlh_rl_env_table, step_continuous) && table_->action_bounds &&
         table_->step_continuous;
}

std::string EnvLibrary::name() const { return table_->name ? table_->name : "unnamed"; }

std::string EnvLibrary::who() const { return "environment library '" + path_ + "' (" + name() + ")"; }

LibraryEnv::LibraryEnv(std::shared_ptr<const EnvLibrary> library, const std::string& settings_json,
                       const std::vector<int64_t>& expected_shape)
    : library_(std::move(library)) {
  const mlh_rl_env_table& t = library_->table();
  mlh_error error = empty_error();
  mlh_rl_env* created = nullptr;
  mlh_status s = t.create(settings_json.c_str(), &created, &error);
  instance_ = {created, t.destroy};
  if (s != MLH_OK || !created) fail("create (settings " + settings_json + ")", s, error);
  mlh_rl_env_spec spec{};
  spec.struct_size = sizeof spec;
  s = t.describe(instance_.get(), &spec, &error);
  if (s != MLH_OK) fail("describe", s, error);
  if (spec.observation_rank < 1 || spec.observation_rank > MLH_RL_ENV_MAX_RANK)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, library_->who() + ": its observation has " +
                                                   std::to_string(spec.observation_rank) +
                                                   " dimensions (1 to " + std::to_string(MLH_RL_ENV_MAX_RANK) + ")");
  shape_.assign(spec.observation_shape, spec.observation_shape + spec.observation_rank);
  size_ = 1;
  for (int64_t d : shape_) {
    if (d < 1 || d > (int64_t{1} << 24))
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, library_->who() + ": observation shape " + shape_text(shape_) +
                                                     " (each size 1 to 16777216)");
    size_ *= d;
  }
  if (!expected_shape.empty() && shape_ != expected_shape)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, library_->who() + ": an instance has observation shape " +
                                                   shape_text(shape_) + ", the first one had " +
                                                   shape_text(expected_shape) + " (every instance must have one shape)");
  // spec.action_dim stays 0 where the library's header has no such field (ABI 1.0).
  const int action_dim = library_->minor() >= 1 ? spec.action_dim : 0;
  if (action_dim != 0 && spec.num_actions != 0)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, library_->who() + ": it describes both " +
                                                   std::to_string(spec.num_actions) + " discrete actions and " +
                                                   std::to_string(action_dim) +
                                                   " continuous ones (one kind: the other is 0)");
  if (action_dim != 0) {
    read_action_bounds(action_dim);
  } else if (spec.num_actions < 1) {
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT,
                     library_->who() + ": " + std::to_string(spec.num_actions) + " actions (at least 1)");
  }
  num_actions_ = spec.num_actions;
  scratch_.assign(static_cast<size_t>(size_ + kGuardBand), 0.0f);
}

void LibraryEnv::read_action_bounds(int action_dim) {
  if (action_dim < 1 || action_dim > MLH_RL_ENV_MAX_ACTION_DIM)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, library_->who() + ": action_dim " + std::to_string(action_dim) +
                                                   " (1 to " + std::to_string(MLH_RL_ENV_MAX_ACTION_DIM) + ")");
  if (!library_->has_continuous_actions())
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, library_->who() + ": it describes continuous actions but its table "
                                                                 "lacks action_bounds or step_continuous");
  bounds_.low.assign(action_dim, 0.0f);
  bounds_.high.assign(action_dim, 0.0f);
  mlh_error error = empty_error();
  const mlh_status s = library_->table().action_bounds(instance_.get(), bounds_.low.data(), bounds_.high.data(), &error);
  if (s != MLH_OK) fail("action_bounds", s, error);
  for (int i = 0; i < action_dim; ++i)
    if (std::isnan(bounds_.low[i]) || std::isnan(bounds_.high[i]) || bounds_.low[i] > bounds_.high[i])
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, library_->who() + ": action " + std::to_string(i) + "'s bounds [" +
                                                     std::to_string(bounds_.low[i]) + ", " +
                                                     std::to_string(bounds_.high[i]) + "] (low <= high, no NaN)");
}

void LibraryEnv::fail(const std::string& what, mlh_status code, const mlh_error& error) const {
  const std::string message = error.code != MLH_OK || error.message[0] ? std::string(error.message) : "no message";
  throw mlh::Error(code == MLH_OK ? MLH_ERR_INTERNAL : code,
                   library_->who() + ": " + what + " failed: " + message);
}

std::string LibraryEnv::at_step() const {
  return "step " + std::to_string(episode_steps_) + " of episode " + std::to_string(episodes_) + " (" +
         std::to_string(total_steps_) + " steps of this env in all)";
}

void LibraryEnv::take_observation(float* observation, const std::string& when) const {
  for (int64_t i = size_; i < size_ + kGuardBand; ++i)
    if (!is_guard(scratch_[i]))
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, library_->who() + ": " + when + " wrote past its observation of " +
                                                     std::to_string(size_) + " floats (shape " + shape_text(shape_) +
                                                     ")");
  check_finite_observation(scratch_.data(), size_, library_->who(), when);
  std::copy(scratch_.begin(), scratch_.begin() + size_, observation);
}

void LibraryEnv::reset(std::mt19937_64& rng, float* observation) {
  std::fill(scratch_.begin() + size_, scratch_.end(), guard_value());
  mlh_error error = empty_error();
  ++episodes_;
  episode_steps_ = 0;
  const mlh_status s = library_->table().reset(instance_.get(), rng(), scratch_.data(), &error);
  if (s != MLH_OK) fail("reset of episode " + std::to_string(episodes_), s, error);
  take_observation(observation, "reset of episode " + std::to_string(episodes_));
}

StepResult LibraryEnv::step(int action, float* observation) {
  if (num_actions_ == 0)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, library_->who() + ": takes continuous actions, not discrete ones");
  return call_step(
      [&](mlh_rl_env_step* out, mlh_error* error) {
        return library_->table().step(instance_.get(), action, scratch_.data(), out, error);
      },
      observation, [&] { return "action " + std::to_string(action); });
}

StepResult LibraryEnv::step_continuous(const float* action, float* observation) {
  if (num_actions_ != 0)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, library_->who() + ": takes discrete actions, not continuous ones");
  return call_step(
      [&](mlh_rl_env_step* out, mlh_error* error) {
        return library_->table().step_continuous(instance_.get(), action, scratch_.data(), out, error);
      },
      observation, [&] {
        std::string text = "action [";
        for (int i = 0; i < bounds_.size(); ++i) text += (i ? ", " : "") + std::to_string(action[i]);
        return text + "]";
      });
}

StepResult LibraryEnv::call_step(const std::function<mlh_status(mlh_rl_env_step*, mlh_error*)>& step,
                                 float* observation, const std::function<std::string()>& action) {
  std::fill(scratch_.begin() + size_, scratch_.end(), guard_value());
  mlh_error error = empty_error();
  mlh_rl_env_step out{};
  out.struct_size = sizeof out;
  ++episode_steps_;
  ++total_steps_;
  const mlh_status s = step(&out, &error);
  if (s != MLH_OK) fail(at_step() + ", " + action(), s, error);
  take_observation(observation, at_step());
  if (!std::isfinite(out.reward))
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT,
                     library_->who() + ": the reward of " + at_step() + " is " + std::to_string(out.reward));
  StepResult r;
  r.reward = out.reward;
  // Gymnasium allows both; the episode's own end wins (its value is 0, nothing to bootstrap).
  r.terminated = out.terminated != 0;
  r.truncated = out.truncated != 0 && !r.terminated;
  r.solved = out.solved != 0;
  r.invalid_move = out.invalid_move != 0;
  return r;
}

void LibraryEnv::action_mask(uint8_t* mask) const {
  if (!has_action_mask()) return Environment::action_mask(mask);
  mlh_error error = empty_error();
  const mlh_status s = library_->table().action_mask(instance_.get(), mask, &error);
  if (s != MLH_OK) fail("action_mask after " + at_step(), s, error);
}

std::vector<double> LibraryEnv::snapshot() const {
  const mlh_rl_env_table& t = library_->table();
  if (!t.snapshot) return {};
  mlh_error error = empty_error();
  uint64_t size = 0;
  mlh_status s = t.snapshot(instance_.get(), nullptr, 0, &size, &error);
  if (s != MLH_OK) fail("snapshot", s, error);
  std::vector<double> values(size);
  if (size > 0) {
    s = t.snapshot(instance_.get(), values.data(), size, &size, &error);
    if (s != MLH_OK) fail("snapshot", s, error);
    if (size != values.size()) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, library_->who() + ": snapshot changed size");
  }
  return values;
}

void LibraryEnv::restore(const std::vector<double>& snapshot) {
  mlh_error error = empty_error();
  const mlh_status s = library_->table().restore(instance_.get(), snapshot.data(), snapshot.size(), &error);
  if (s != MLH_OK) fail("restore of a checkpointed episode", s, error);
}

}  // namespace mlh::rl
