// A GraphRecorder that runs on the CPU: capture keeps the body without running it, as CUDA's
// stream capture records without executing, and each replay runs it. It can be told to
// refuse the capture, as CUDA does for a body that synchronizes with the host.
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

#include <mlh/runtime/step_graph.hpp>

struct FakeGraphRecorder : mlh::rt::GraphRecorder {
  std::function<void()> captured;
  std::string refuse;  // non-empty: capture throws this
  int* captures = nullptr;  // counted where a test asks

  void capture(const std::function<void()>& body) override {
    if (!refuse.empty()) throw std::runtime_error(refuse);
    captured = body;
    if (captures) ++*captures;
  }
  void replay() override { captured(); }
};
