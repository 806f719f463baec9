#include "gymnasium_env.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>

#include <mlh/plugin.hpp>

#include "gymnasium_worker_source.hpp"


extern char** environ;

namespace ppo {

namespace {

// The worker's descriptors (gymnasium_worker.py's SOCKET_FD, BLOCK_FD).
constexpr int kWorkerSocketFd = 3, kWorkerBlockFd = 4;

std::string errno_text() { return std::strerror(errno); }

// An anonymous shared file: nothing in a file system to clean up after a crash.
int anonymous_shared_file() {
#if defined(__linux__)
  return memfd_create("mlhost-gymnasium", MFD_CLOEXEC);
#else  // macOS: a POSIX shared-memory object, unlinked at once
  const std::string name = "/mlhost-gym-" + std::to_string(getpid()) + "-" + std::to_string(reinterpret_cast<uintptr_t>(&name));
  const int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  if (fd >= 0) {
    shm_unlink(name.c_str());
    fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  return fd;
#endif
}

#if !defined(MSG_NOSIGNAL)  // macOS: SO_NOSIGPIPE on the socket instead
#define MSG_NOSIGNAL 0
#endif

}  // namespace

GymnasiumEnv::GymnasiumEnv(const GymnasiumSpec& spec) : id_(spec.id), name_(spec.id) {
  if (spec.id.empty())
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT,
                     "env=gymnasium needs the environment: set gymnasium.id (a registered id such as Pendulum-v1, or "
                     "module:Class)");
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0)
    throw mlh::Error(MLH_ERR_INTERNAL, who() + ": socketpair: " + errno_text());
  fcntl(fds[0], F_SETFD, FD_CLOEXEC);
  fcntl(fds[1], F_SETFD, FD_CLOEXEC);
#if defined(SO_NOSIGPIPE)
  const int on = 1;
  setsockopt(fds[0], SOL_SOCKET, SO_NOSIGPIPE, &on, sizeof on);
#endif
  socket_ = fds[0];
  // The shared block, sized once the worker has said how large its observation is.
  block_fd_ = anonymous_shared_file();
  if (block_fd_ < 0) {
    close(fds[1]);
    shut_down();
    throw mlh::Error(MLH_ERR_INTERNAL, who() + ": a shared-memory file: " + errno_text());
  }
  const nlohmann::json worker_spec = {{"id", spec.id},
                                      {"kwargs", spec.kwargs.is_null() ? nlohmann::json::object() : spec.kwargs},
                                      {"wrappers", spec.wrappers},
                                      {"pythonpath", spec.pythonpath}};
  const std::string python = spec.python.empty() ? "python3" : spec.python;
  const std::string spec_text = worker_spec.dump();
  std::vector<char*> argv{const_cast<char*>(python.c_str()), const_cast<char*>("-u"), const_cast<char*>("-c"),
                          const_cast<char*>(kGymnasiumWorkerSource), const_cast<char*>(spec_text.c_str()), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 onto fixed numbers clears close-on-exec there: the worker keeps exactly these two.
  posix_spawn_file_actions_adddup2(&actions, fds[1], kWorkerSocketFd);
  posix_spawn_file_actions_adddup2(&actions, block_fd_, kWorkerBlockFd);
  const int spawned = posix_spawnp(&pid_, python.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (spawned != 0) {
    pid_ = -1;
    shut_down();
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, who() + ": cannot start the Python interpreter '" + python +
                                                   "' (config field 'gymnasium.python'): " + std::strerror(spawned));
  }

  try {
    describe(python);
  } catch (...) {
    shut_down();
    throw;
  }
}

void GymnasiumEnv::describe(const std::string& python) {
  char tag = 0;
  uint32_t length = 0;
  try {
    receive(&tag, 1);
    receive(&length, 4);
  } catch (const mlh::Error&) {
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, who() + ": '" + python +
                                                   "' exited before it described the environment (is it a Python "
                                                   "3 interpreter? its output is above)");
  }
  std::string text(length, '\0');
  receive(text.data(), length);
  const nlohmann::json described = nlohmann::json::parse(text);
  if (described.contains("error"))
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, who() + ": " + described["error"].get<std::string>());
  name_ = described.at("name").get<std::string>();
  shape_ = described.at("observation_shape").get<std::vector<int64_t>>();
  size_ = 1;
  for (int64_t d : shape_) size_ *= d;
  if (shape_.empty() || size_ < 1)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, who() + ": observation shape " + shape_text(shape_) +
                                                   " (at least one dimension, each of size 1 or more)");
  if (described.contains("num_actions")) {
    num_actions_ = described["num_actions"].get<int>();
    if (num_actions_ < 1) throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, who() + ": Discrete(0) actions");
  } else {
    bounds_.low = described.at("low").get<std::vector<float>>();
    bounds_.high = described.at("high").get<std::vector<float>>();
    if (bounds_.size() < 1 || bounds_.size() > MLH_RL_ENV_MAX_ACTION_DIM)
      throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, who() + ": a Box action of " + std::to_string(bounds_.size()) +
                                                     " values (1 to " + std::to_string(MLH_RL_ENV_MAX_ACTION_DIM) + ")");
  }
  action_offset_ = described.at("action_offset").get<size_t>();
  block_size_ = action_offset_ + 8 * static_cast<size_t>(std::max(1, bounds_.size()));
  if (ftruncate(block_fd_, static_cast<off_t>(block_size_)) != 0)
    throw mlh::Error(MLH_ERR_INTERNAL, who() + ": sizing the shared block: " + errno_text());
  block_ = mmap(nullptr, block_size_, PROT_READ | PROT_WRITE, MAP_SHARED, block_fd_, 0);
  if (block_ == MAP_FAILED) {
    block_ = nullptr;
    throw mlh::Error(MLH_ERR_INTERNAL, who() + ": mapping the shared block: " + errno_text());
  }
  const uint64_t size = block_size_;
  send("M", 1);
  send(&size, 8);
  expect_ok("mapping the shared block");
}

GymnasiumEnv::~GymnasiumEnv() { shut_down(); }

void GymnasiumEnv::shut_down() noexcept {
  if (socket_ >= 0 && pid_ > 0) {
    // Asks it to close its environment; a worker that does not go within a second is killed.
    (void)::send(socket_, "Q", 1, MSG_NOSIGNAL);
  }
  if (socket_ >= 0) close(socket_);
  socket_ = -1;
  if (pid_ > 0) {
    int status = 0;
    pid_t done = 0;
    for (int i = 0; i < 100 && (done = waitpid(pid_, &status, WNOHANG)) == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (done == 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
    }
    pid_ = -1;
  }
  if (block_) munmap(block_, block_size_);
  block_ = nullptr;
  if (block_fd_ >= 0) close(block_fd_);
  block_fd_ = -1;
}

std::string GymnasiumEnv::who() const { return "gymnasium environment '" + id_ + "'"; }

void GymnasiumEnv::send(const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::send(socket_, p, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) worker_gone("sending it a command");
    p += n;
    size -= static_cast<size_t>(n);
  }
}

void GymnasiumEnv::receive(void* data, size_t size) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = ::recv(socket_, p, size, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) worker_gone("waiting for its answer");
    p += n;
    size -= static_cast<size_t>(n);
  }
}

void GymnasiumEnv::worker_gone(const std::string& what) {
  std::string how = "it exited";
  int status = 0;
  if (pid_ > 0 && waitpid(pid_, &status, 0) == pid_) {
    pid_ = -1;
    if (WIFSIGNALED(status)) how = std::string("it was killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
                                   strsignal(WTERMSIG(status)) + ")";
    else if (WIFEXITED(status)) how = "it exited with status " + std::to_string(WEXITSTATUS(status));
  }
  throw mlh::Error(MLH_ERR_INTERNAL, who() + ": its Python worker is gone (" + how + ") while " + what +
                                         (total_steps_ > 0 ? ", at " + at_step() : std::string()));
}

void GymnasiumEnv::expect_ok(const std::string& what) {
  char tag = 0;
  receive(&tag, 1);
  if (tag == 'K') return;
  if (tag != 'E') throw mlh::Error(MLH_ERR_INTERNAL, who() + ": " + what + ": an answer it does not give");
  uint32_t length = 0;
  receive(&length, 4);
  std::string message(length, '\0');
  receive(message.data(), length);
  throw mlh::Error(MLH_ERR_INTERNAL, who() + ": " + what + " failed: " + message);
}

std::string GymnasiumEnv::at_step() const {
  return "step " + std::to_string(episode_steps_) + " of episode " + std::to_string(episodes_) + " (" +
         std::to_string(total_steps_) + " steps of this env in all)";
}

void GymnasiumEnv::copy_observation(float* observation, const std::string& when) const {
  const float* shared = static_cast<const float*>(block_);
  check_finite_observation(shared, size_, who(), when);
  std::copy(shared, shared + size_, observation);
}

void GymnasiumEnv::reset(std::mt19937_64& rng, float* observation) {
  ++episodes_;
  episode_steps_ = 0;
  // Gymnasium seeds take 63 bits at most (numpy's SeedSequence takes any int; keep it portable).
  const uint64_t seed = rng() >> 1;
  send("R", 1);
  send(&seed, 8);
  const std::string when = "reset of episode " + std::to_string(episodes_);
  expect_ok(when);
  copy_observation(observation, when);
}

void GymnasiumEnv::begin_step(int action) {
  if (num_actions_ == 0)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, who() + ": takes continuous actions, not discrete ones");
  const int64_t a = action;
  std::memcpy(static_cast<char*>(block_) + action_offset_, &a, sizeof a);
  send("S", 1);
  stepping_ = true;
}

void GymnasiumEnv::begin_step_continuous(const float* action) {
  if (num_actions_ != 0)
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, who() + ": takes discrete actions, not continuous ones");
  std::memcpy(static_cast<char*>(block_) + action_offset_, action, sizeof(float) * bounds_.size());
  send("S", 1);
  stepping_ = true;
}

StepResult GymnasiumEnv::end_step(float* observation) {
  if (!stepping_) throw mlh::Error(MLH_ERR_INTERNAL, who() + ": end_step without begin_step");
  stepping_ = false;
  ++episode_steps_;
  ++total_steps_;
  expect_ok(at_step());
  double reward = 0;
  uint8_t flags[2] = {0, 0};
  receive(&reward, 8);
  receive(flags, 2);
  copy_observation(observation, at_step());
  if (!std::isfinite(reward))
    throw mlh::Error(MLH_ERR_INVALID_ARGUMENT, who() + ": the reward of " + at_step() + " is " + std::to_string(reward));
  StepResult r;
  r.reward = static_cast<float>(reward);
  r.terminated = flags[0] != 0;
  r.truncated = flags[1] != 0 && !r.terminated;  // the episode's own end wins, as for libraries
  return r;
}

StepResult GymnasiumEnv::step(int action, float* observation) {
  begin_step(action);
  return end_step(observation);
}

StepResult GymnasiumEnv::step_continuous(const float* action, float* observation) {
  begin_step_continuous(action);
  return end_step(observation);
}

}  // namespace ppo
