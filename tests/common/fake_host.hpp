// A host for algorithm tests that run a command in-process: its callbacks record logs,
// metrics (by name, in order), progress and the summary, and should_stop() turns true once
// progress reaches stop_at (to test cancellation). run_in_process() builds the run context
// around it. Used by the protonet, ppo and trm tests.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <mlh/mlh_algorithm.h>
#include <mlh/plugin.hpp>

struct FakeHost {
  std::vector<std::string> logs;
  std::map<std::string, std::vector<double>> metrics;
  std::string summary;
  int64_t progress = 0;
  int64_t stop_at = -1;  // should_stop turns true once progress reaches this

  mlh_host_callbacks callbacks() {
    mlh_host_callbacks h{};
    h.struct_size = sizeof(h);
    h.host_data = this;
    h.log = [](void* d, int32_t, const char* m) { static_cast<FakeHost*>(d)->logs.push_back(m); };
    h.metric = [](void* d, const char* n, double v, int64_t) { static_cast<FakeHost*>(d)->metrics[n].push_back(v); };
    h.progress = [](void* d, int64_t done, int64_t, const char*) { static_cast<FakeHost*>(d)->progress = done; };
    h.should_stop = [](void* d) -> int32_t {
      auto* self = static_cast<FakeHost*>(d);
      return self->stop_at >= 0 && self->progress >= self->stop_at;
    };
    h.summary = [](void* d, const char* s) { static_cast<FakeHost*>(d)->summary = s; };
    return h;
  }
};

struct InProcessRun {
  std::string command;
  std::string config_json = "{}";
  std::string run_dir;
  std::string plan_json = R"({"torch_device": "cpu", "precision": "fp32"})";
  std::string device_json = "{}";
  bool resume = false;
};

// Calls `run_command` (an algorithm's dispatch) with a context for `run` whose callbacks are
// `host`'s. Returns MLH_OK, or the code of the mlh::Error it threw, its message in *error.
inline mlh_status run_in_process(FakeHost& host, const std::function<void(mlh::RunContext&)>& run_command,
                                 const InProcessRun& run, std::string* error = nullptr) {
  const mlh_host_callbacks callbacks = host.callbacks();
  mlh_run_context c{};
  c.struct_size = sizeof(c);
  c.command = run.command.c_str();
  c.config_json = run.config_json.c_str();
  c.device_json = run.device_json.c_str();
  c.torch_device = "cpu";
  c.plan_json = run.plan_json.c_str();
  c.run_dir = run.run_dir.c_str();
  c.resume = run.resume ? 1 : 0;
  c.world_size = 1;
  c.host = &callbacks;
  mlh::RunContext ctx(c);
  try {
    run_command(ctx);
    return MLH_OK;
  } catch (const mlh::Error& e) {
    if (error) *error = e.what();
    return e.code();
  }
}
