// For tests that run an algorithm plugin through the real host: the host binary with only
// the plugin's folder on the search path (the build's cpu plugin comes from --plugin-dir
// too, the caller passes it), a fresh temporary folder per test, and JSON files read back.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "remove_tree.hpp"

struct HostResult {
  int rc = -1;
  std::string output;  // stdout and stderr
};

// Runs a shell command line; its exit code and what it printed (as the line redirects it).
inline HostResult run_command(const std::string& command_line) {
  HostResult r;
  FILE* p = popen(command_line.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Runs `host_bin --no-default-plugin-dir --plugin-dir plugin_dir args`, without calibrating
// first and without any calibration the user's own runs cached or hardware settings file the
// user keeps in ~/.config/mlhost (hermetic plans). `env` ("NAME=value ...") comes after those
// settings and may replace them (MLH_NO_CALIBRATE=0 measures). `cwd`: the folder it runs in
// (empty: the test's).
inline HostResult run_host(const std::string& host_bin, const std::string& plugin_dir, const std::string& args,
                           const std::string& env = "", const std::string& cwd = "") {
  const std::string cache = (std::filesystem::temp_directory_path() / ("mlhost-test-cache-" + std::to_string(::getpid()))).string();
  const std::string cmd = (cwd.empty() ? std::string() : "cd '" + cwd + "' && ") +
                          "MLH_NO_CALIBRATE=1 MLH_MACHINE_SHARING=dedicated XDG_CACHE_HOME='" + cache + "' XDG_CONFIG_HOME='" + cache + "' " + env + " " + host_bin +
                          " --no-default-plugin-dir --plugin-dir " + plugin_dir + " " + args + " 2>&1";
  return run_command(cmd);
}

inline nlohmann::json read_json_file(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

inline void write_text_file(const std::string& path, const std::string& text) { std::ofstream(path) << text; }
// A whole text file ("" where it cannot be read).
inline std::string read_text_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// What the worker applied of the plan (summary.json's result.plan_applied, the runtime's
// report: mlh/runtime/plan_effects.hpp).
inline nlohmann::json plan_applied(const std::string& run_dir) {
  return read_json_file(run_dir + "/summary.json")["result"]["plan_applied"];
}

// Whether this machine's CPU runs bf16 (the cpu plugin's record, as `host --probe --json` shows it).
inline bool cpu_has_bf16(const HostResult& probe_json) {
  const auto start = probe_json.output.find('{');
  if (start == std::string::npos) return false;
  const nlohmann::json report = nlohmann::json::parse(probe_json.output.substr(start), nullptr, false);
  if (report.is_discarded()) return false;
  for (const auto& d : report.value("devices", nlohmann::json::array()))
    if (d.value("id", "") == "cpu:0")
      for (const auto& p : d.value("precisions", nlohmann::json::array()))
        if (p == "bf16") return true;
  return false;
}

// dir_: a fresh folder for each test, removed after it.
class HostTempDirTest : public ::testing::Test {
 protected:
  explicit HostTempDirTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() / (prefix_ + std::to_string(::getpid()))).string();
    remove_tree(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { remove_tree(dir_); }
  std::string prefix_;
  std::string dir_;
};
