// A host for algorithm tests that run a command in-process: its callbacks record logs,
// metrics (by name, in order), progress and the summary, and should_stop() turns true once
// progress reaches stop_at (to test cancellation). Used by the protonet and ppo tests.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <mlh/mlh_algorithm.h>

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
