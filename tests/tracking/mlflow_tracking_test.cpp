// MLflow tracking (host/run/tracking) against a real MLflow tracking server, read back with
// MLflow's own Python client (python/mlflow_read_run.py): a run folder written as the host
// writes it (RunSink's metrics.jsonl, config.json, plan.json, summary.json, a model) arrives
// with its params, tags, status, every metric point once at its step and time, and its
// artifacts; a server that is down costs nothing and gets everything once it is up; a server
// that answers errors gives a warning naming the URL, the status and its message.
//
// The server is `mlflow server` from the repository's .venv, or MLH_TEST_MLFLOW's
// (tests/common/mlflow_server.hpp); without one, the tests that need a server skip and say why.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "free_port.hpp"
#include "mlflow_server.hpp"
#include "run/run_sink.hpp"
#include "run/tracking/mlflow_client.hpp"
#include "run/tracking/mlflow_sync.hpp"
#include "run/tracking/tracker.hpp"
#include "temp_dir.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace {

using nlohmann::json;
namespace fs = std::filesystem;
using mlhost::MlflowTracking;
using mlhost::SyncMode;
using mlhost::SyncResult;

fs::path mlflow_program() { return mlflow_test::mlflow_program(MLH_TEST_SOURCE_DIR); }

using mlflow_test::Child;
using mlflow_test::read_text;

// The test's server, from the repository's venv (or MLH_TEST_MLFLOW).
class Server : public mlflow_test::Server {
 public:
  Server(const fs::path& dir, int port) : mlflow_test::Server(mlflow_program(), dir, port) {}
  ::testing::AssertionResult ready() {
    const std::string problem = wait_ready();
    if (problem.empty()) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << problem;
  }
};

MlflowTracking tracking_of(const std::string& uri, const std::string& experiment = "mlhost-tests") {
  MlflowTracking t;
  t.server.uri = uri;
  t.server.timeout_s = 20;
  t.experiment_name = experiment;
  t.tags = {{"algorithm", "toyreg"}, {"command", "train"}, {"libtorch_version", "2.5.1"}};
  return t;
}

// The run as MLflow's Python client sees it.
json read_back(const std::string& uri, const std::string& run_id) {
  return mlflow_test::read_back(mlflow_program(), std::string(MLH_TEST_SOURCE_DIR) + "/tests/tracking/python/mlflow_read_run.py", uri, run_id);
}

void write_file(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

// A run folder's start as run_workers writes it: the resolved config and the plan.
void start_run_folder(const fs::path& dir) {
  write_file(dir / "config.json", json{{"lr", 0.001}, {"steps", 1200}, {"model", {{"layers", 2}, {"hidden", 64}}},
                                       {"name", "toy"}, {"milestones", {100, 200}}}
                                      .dump(2));
  write_file(dir / "plan.json", json{{"precision", "fp32"},
                                     {"batch_size", 32},
                                     {"device", "cpu:0"},
                                     {"device_name", "Test CPU"},
                                     {"threads", {{"intra_op", 2}, {"inter_op", 1}}},
                                     {"max_steps", nullptr},
                                     {"sources", {{"precision", "rule: fp32 on CPU"}}}}
                                    .dump(2));
}

// Its end as the worker writes it.
void end_run_folder(const fs::path& dir, const std::string& status) {
  write_file(dir / "summary.json", json{{"algorithm", "toyreg"}, {"command", "train"}, {"status", status}}.dump(2));
  write_file(dir / "model.safetensors", std::string(4096, 'm'));
}

struct Point {
  int64_t step;
  double value;
  int64_t timestamp_ms;
};

// metrics.jsonl as the run wrote it, per metric.
std::map<std::string, std::vector<Point>> jsonl_metrics(const fs::path& dir) {
  std::map<std::string, std::vector<Point>> m;
  std::ifstream in(dir / "metrics.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    const json j = json::parse(line);
    const double v = j["value"].is_number() ? j["value"].get<double>() : std::nan("");
    m[j["name"].get<std::string>()].push_back(
        {j["step"].get<int64_t>(), v, static_cast<int64_t>(std::llround(j["wall_time"].get<double>() * 1000.0))});
  }
  return m;
}

void expect_same_metrics(const json& run, const fs::path& dir) {
  const auto written = jsonl_metrics(dir);
  ASSERT_EQ(run["metrics"].size(), written.size()) << run["metrics"].dump();
  for (const auto& [name, points] : written) {
    const std::string key = mlhost::mlflow_key(name);
    ASSERT_TRUE(run["metrics"].contains(key)) << key;
    const json& history = run["metrics"][key];
    ASSERT_EQ(history.size(), points.size()) << key << ": each point once";
    for (size_t i = 0; i < points.size(); ++i) {
      EXPECT_EQ(history[i][0].get<int64_t>(), points[i].step) << key;
      if (std::isnan(points[i].value))
        EXPECT_EQ(history[i][1], "nan") << key;
      else
        EXPECT_DOUBLE_EQ(history[i][1].get<double>(), points[i].value) << key;
      EXPECT_EQ(history[i][2].get<int64_t>(), points[i].timestamp_ms) << key << " step " << points[i].step;
    }
  }
}

class MlflowTrackingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(mlflow_program()))
      GTEST_SKIP() << "no mlflow at " << mlflow_program()
                   << " (bash scripts/torch-venv.sh --peers installs it into .venv/; MLH_TEST_MLFLOW names another)";
  }
  TempDir tmp_{"mlhost-mlflow-"};
};

TEST(MlflowRules, KeysAndValuesFitMlflowsLimits) {
  EXPECT_EQ(mlhost::mlflow_key("train/loss"), "train/loss");
  EXPECT_EQ(mlhost::mlflow_key("model.layers-2 x_y"), "model.layers-2 x_y");
  EXPECT_EQ(mlhost::mlflow_key("acc@1:top(5)"), "acc_1_top_5_");
  EXPECT_EQ(mlhost::mlflow_key(std::string(300, 'k')).size(), 250u);
  bool truncated = true;
  EXPECT_EQ(mlhost::mlflow_param_value("short", &truncated), "short");
  EXPECT_FALSE(truncated);
  // A cut never splits a UTF-8 character.
  const std::string long_value = std::string(5999, 'a') + "\xc3\xa9" + std::string(10, 'b');
  const std::string cut = mlhost::mlflow_param_value(long_value, &truncated);
  EXPECT_TRUE(truncated);
  EXPECT_EQ(cut, std::string(5999, 'a'));
}

TEST(MlflowRules, AnUnsupportedUriIsAnErrorNotACrash) {
  const SyncResult r = mlhost::sync_mlflow("/nonexistent", tracking_of("file:///tmp/mlruns"), SyncMode::kEnded);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("file:///tmp/mlruns"), std::string::npos) << r.error;
  EXPECT_NE(mlhost::unsupported_tracking_uri("").find("MLFLOW_TRACKING_URI"), std::string::npos);
}

TEST(MlflowRules, TheSyncIntervalComesFromTheEnvironmentAndABadOneIsNamed) {
  auto with_interval = [](const char* value) {
    return mlhost::mlflow_tracking_from_env(
        [value](const char* name) -> const char* { return std::string(name) == "MLH_TRACKING_INTERVAL_S" ? value : nullptr; },
        "");
  };
  EXPECT_EQ(with_interval(nullptr).sync_interval, std::chrono::seconds(15));
  EXPECT_EQ(with_interval("0.3").sync_interval, std::chrono::milliseconds(300));
  EXPECT_EQ(with_interval("0.3").interval_error, "");
  for (const char* bad : {"fast", "0", "-1", "2s", "1e9"}) {
    const mlhost::MlflowTracking t = with_interval(bad);
    EXPECT_NE(t.interval_error.find(std::string("MLH_TRACKING_INTERVAL_S='") + bad + "'"), std::string::npos) << bad;
    EXPECT_EQ(t.sync_interval, std::chrono::seconds(15)) << bad;
  }
}

// A run synced while it trains and once more at its end: MLflow's client reads back the
// params, tags, status, every metric point once, and the artifacts.
// MLflow's clients treat these as one server; so does the sync cursor.
TEST(MlflowRules, OneServerHasOneUri) {
  using mlhost::normalized_tracking_uri;
  for (const char* same : {"http://127.0.0.1:5000/", "HTTP://127.0.0.1:5000", "http://127.0.0.1:5000//"})
    EXPECT_EQ(normalized_tracking_uri(same), "http://127.0.0.1:5000") << same;
  EXPECT_EQ(normalized_tracking_uri("http://MLflow.Example.com:80/prefix/"), "http://mlflow.example.com/prefix");
  EXPECT_EQ(normalized_tracking_uri("https://host:443"), "https://host");
  EXPECT_EQ(normalized_tracking_uri("https://host:8443/"), "https://host:8443");
  EXPECT_EQ(normalized_tracking_uri("http://User:PassWord@Host:5000/"), "http://User:PassWord@host:5000");
  EXPECT_EQ(normalized_tracking_uri("./mlruns"), "./mlruns") << "not a URL: left for unsupported_tracking_uri";
  const auto env = [](const char* name) -> const char* {
    return std::string(name) == "MLFLOW_TRACKING_URI" ? "http://localhost:5000/" : nullptr;
  };
  EXPECT_EQ(mlhost::mlflow_server_from_env(env).uri, "http://localhost:5000");
}

TEST_F(MlflowTrackingTest, ARunFolderArrivesWhole) {
  auto server = std::make_unique<Server>(tmp_ / "server", free_loopback_port_for_test());
  ASSERT_TRUE(server->ready());
  const fs::path dir = tmp_ / "runs" / "toyreg-20261126-120000";
  start_run_folder(dir);
  const MlflowTracking tracking = tracking_of(server->uri());
  {
    mlhost::RunSink sink(dir, /*console=*/false);
    for (int64_t step = 0; step < 700; ++step) {
      sink.metric("train/loss", 1.0 / static_cast<double>(step + 1), step);
      if (step % 100 == 0) sink.metric("eval/acc", static_cast<double>(step) / 1200.0, step);
    }
    sink.metric("train/grad norm!", std::numeric_limits<double>::quiet_NaN(), 3);  // renamed, and not a number
    const SyncResult live = mlhost::sync_mlflow(dir, tracking, SyncMode::kLive);
    ASSERT_TRUE(live.ok) << live.error;
    EXPECT_EQ(live.metrics_sent, 708);
    EXPECT_EQ(live.artifacts_sent, 2) << "config.json and plan.json during the run";
    for (int64_t step = 700; step < 1200; ++step) sink.metric("train/loss", 1.0 / static_cast<double>(step + 1), step);
  }
  end_run_folder(dir, "completed");
  const SyncResult end = mlhost::sync_mlflow(dir, tracking, SyncMode::kEnded);
  ASSERT_TRUE(end.ok) << end.error;
  EXPECT_EQ(end.metrics_sent, 500);
  EXPECT_EQ(end.params_sent, 0) << "params went with the first sync";
  EXPECT_EQ(end.status_sent, "FINISHED");
  // Again: nothing new to send.
  const SyncResult again = mlhost::sync_mlflow(dir, tracking, SyncMode::kEnded);
  ASSERT_TRUE(again.ok) << again.error;
  EXPECT_EQ(again.metrics_sent + again.params_sent + again.artifacts_sent, 0);
  EXPECT_EQ(again.status_sent, "");

  // The same server spelled with a trailing slash: the same MLflow run, nothing sent twice.
  const SyncResult slash = mlhost::sync_mlflow(dir, tracking_of(server->uri() + "/"), SyncMode::kEnded);
  ASSERT_TRUE(slash.ok) << slash.error;
  EXPECT_EQ(slash.run_id, end.run_id);
  EXPECT_EQ(slash.metrics_sent + slash.params_sent + slash.artifacts_sent, 0);

  const json cursor = json::parse(read_text(mlhost::mlflow_cursor_path(dir)));
  EXPECT_EQ(cursor["metrics_lines"], 1208);
  EXPECT_EQ(cursor["run_id"], end.run_id);

  const json run = read_back(server->uri(), end.run_id);
  ASSERT_TRUE(run.is_object()) << "mlflow_read_run.py failed";
  EXPECT_EQ(run["status"], "FINISHED");
  EXPECT_EQ(run["experiment_name"], "mlhost-tests");
  EXPECT_EQ(run["run_name"], "toyreg-20261126-120000");
  EXPECT_EQ(run["tags"]["mlflow.runName"], "toyreg-20261126-120000");
  EXPECT_EQ(run["tags"]["algorithm"], "toyreg");
  EXPECT_EQ(run["tags"]["command"], "train");
  EXPECT_EQ(run["tags"]["device"], "cpu:0");
  EXPECT_EQ(run["tags"]["libtorch_version"], "2.5.1");
  EXPECT_EQ(run["tags"]["host_version"], MLHOST_VERSION);
  EXPECT_EQ(run["params"]["lr"], "0.001");
  EXPECT_EQ(run["params"]["steps"], "1200");
  EXPECT_EQ(run["params"]["model.layers"], "2");
  EXPECT_EQ(run["params"]["name"], "toy");
  EXPECT_EQ(run["params"]["milestones"], "[100,200]");
  EXPECT_EQ(run["params"]["plan.precision"], "fp32");
  EXPECT_EQ(run["params"]["plan.threads.intra_op"], "2");
  EXPECT_EQ(run["params"]["plan.max_steps"], "null");
  EXPECT_EQ(run["params"]["plan.sources.precision"], "rule: fp32 on CPU");
  EXPECT_GT(run["end_time"].get<int64_t>(), 0);
  expect_same_metrics(run, dir);
  for (const char* f : {"config.json", "plan.json", "summary.json", "model.safetensors"}) {
    ASSERT_TRUE(run["artifacts"].contains(f)) << f << " " << run["artifacts"].dump();
    EXPECT_EQ(run["artifacts"][f].get<int64_t>(), static_cast<int64_t>(fs::file_size(dir / f))) << f;
  }

  // The server goes with everything it started (its web workers and job consumers run in
  // sessions of their own): nothing outlives the test, holding its port and folder.
  const std::vector<pid_t> started = server->processes();
  EXPECT_GT(started.size(), 1u) << "mlflow server starts workers";
  server.reset();
  for (const pid_t p : started) {
    for (int i = 0; i < 50 && mlflow_test::alive(p); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_FALSE(mlflow_test::alive(p)) << "process " << p << " of the server is still running";
  }
}

// An experiment whose artifact store is a path of the server's own (not behind its proxy):
// the REST API cannot write there, so every file is reported as not sent, with why and the
// server options that fix it; params and metrics still arrive.
TEST_F(MlflowTrackingTest, ArtifactsThatCannotReachTheServerAreListedWithTheReason) {
  Server server(tmp_ / "server", free_loopback_port_for_test());
  ASSERT_TRUE(server.ready());
  mlhost::MlflowServer where;
  where.uri = server.uri();
  mlhost::MlflowClient client(where);
  client.post("experiments/create", {{"name", "local-artifacts"}, {"artifact_location", (tmp_ / "elsewhere").string()}});
  const fs::path dir = tmp_ / "runs" / "toyreg-local";
  start_run_folder(dir);
  end_run_folder(dir, "completed");
  const SyncResult r = mlhost::sync_mlflow(dir, tracking_of(server.uri(), "local-artifacts"), SyncMode::kEnded);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_GT(r.params_sent, 0);
  EXPECT_EQ(r.artifacts_sent, 0);
  EXPECT_EQ(std::set<std::string>(r.artifacts_not_sent.begin(), r.artifacts_not_sent.end()),
            (std::set<std::string>{"config.json", "plan.json", "summary.json", "model.safetensors"}));
  EXPECT_NE(r.artifacts_not_sent_why.find((tmp_ / "elsewhere").string()), std::string::npos) << r.artifacts_not_sent_why;
  EXPECT_NE(r.artifacts_not_sent_why.find("--serve-artifacts"), std::string::npos) << r.artifacts_not_sent_why;
}

// A server that is down: a warning naming it, nothing marked sent; once it is up, one sync
// sends everything, each metric point once.
TEST_F(MlflowTrackingTest, AServerThatIsDownGetsEverythingOnceItIsUp) {
  const int port = free_loopback_port_for_test();
  const std::string uri = "http://127.0.0.1:" + std::to_string(port);
  const fs::path dir = tmp_ / "run";
  start_run_folder(dir);
  {
    mlhost::RunSink sink(dir, /*console=*/false);
    for (int64_t step = 0; step < 50; ++step) sink.metric("train/loss", 0.5 * static_cast<double>(step), step);
  }
  end_run_folder(dir, "failed");
  const MlflowTracking tracking = tracking_of(uri, "mlhost-offline");
  const SyncResult down = mlhost::sync_mlflow(dir, tracking, SyncMode::kEnded);
  EXPECT_FALSE(down.ok);
  EXPECT_NE(down.error.find(uri), std::string::npos) << down.error;
  EXPECT_NE(down.error.find("cannot be reached"), std::string::npos) << down.error;
  const json cursor = json::parse(read_text(mlhost::mlflow_cursor_path(dir)));
  EXPECT_FALSE(cursor.contains("run_id")) << cursor.dump(2);
  EXPECT_EQ(cursor["metrics_lines"], 0);
  EXPECT_EQ(cursor["params_sent"], false);

  Server server(tmp_ / "server", port);
  ASSERT_TRUE(server.ready());
  const SyncResult up = mlhost::sync_mlflow(dir, tracking, SyncMode::kEnded);
  ASSERT_TRUE(up.ok) << up.error;
  EXPECT_EQ(up.metrics_sent, 50);
  EXPECT_EQ(up.status_sent, "FAILED");
  EXPECT_EQ(mlhost::sync_mlflow(dir, tracking, SyncMode::kEnded).metrics_sent, 0);
  const json run = read_back(uri, up.run_id);
  ASSERT_TRUE(run.is_object());
  EXPECT_EQ(run["status"], "FAILED");
  EXPECT_EQ(run["experiment_name"], "mlhost-offline");
  expect_same_metrics(run, dir);
}

// The state a kill between a batch's post and the cursor's update leaves: the server holds the
// points, the cursor does not say so, only that a batch was in flight. The next sync asks the
// server and sends none of them again.
TEST_F(MlflowTrackingTest, ABatchTheServerTookButTheCursorMissedIsNotSentTwice) {
  const int port = free_loopback_port_for_test();
  const std::string uri = "http://127.0.0.1:" + std::to_string(port);
  const fs::path dir = tmp_ / "run";
  start_run_folder(dir);
  Server server(tmp_ / "server", port);
  ASSERT_TRUE(server.ready());
  const MlflowTracking tracking = tracking_of(uri, "mlhost-in-flight");
  ASSERT_TRUE(mlhost::sync_mlflow(dir, tracking, SyncMode::kLive).ok);  // the run, no metrics yet
  json cursor_before = json::parse(read_text(mlhost::mlflow_cursor_path(dir)));
  {
    mlhost::RunSink sink(dir, /*console=*/false);
    for (int64_t step = 0; step < 30; ++step) sink.metric("train/loss", 0.25 * static_cast<double>(step), step);
  }
  const SyncResult sent = mlhost::sync_mlflow(dir, tracking, SyncMode::kLive);
  ASSERT_TRUE(sent.ok) << sent.error;
  ASSERT_EQ(sent.metrics_sent, 30);

  cursor_before["in_flight"] = {{"train/loss", 29}};
  write_file(mlhost::mlflow_cursor_path(dir), cursor_before.dump(2));
  end_run_folder(dir, "completed");
  const SyncResult again = mlhost::sync_mlflow(dir, tracking, SyncMode::kEnded);
  ASSERT_TRUE(again.ok) << again.error;
  EXPECT_EQ(again.metrics_sent, 0);
  const json cursor = json::parse(read_text(mlhost::mlflow_cursor_path(dir)));
  EXPECT_FALSE(cursor.contains("in_flight")) << cursor.dump(2);
  const json run = read_back(uri, sent.run_id);
  ASSERT_TRUE(run.is_object());
  expect_same_metrics(run, dir);
}

// The launcher's tracker: its thread sends the run while it goes on (RUNNING, the metrics so
// far), and finish() closes it with summary.json's status.
TEST_F(MlflowTrackingTest, TheLaunchersTrackerSendsWhileTheRunGoesOn) {
  Server server(tmp_ / "server", free_loopback_port_for_test());
  ASSERT_TRUE(server.ready());
  const fs::path dir = tmp_ / "run";
  mlhost::MlflowTracking tracking = tracking_of(server.uri());
  tracking.sync_interval = std::chrono::milliseconds(200);
  mlhost::RunTracker tracker(tracking, dir);
  start_run_folder(dir);  // after the tracker started, as run_workers writes it
  {
    mlhost::RunSink sink(dir, /*console=*/false);
    for (int64_t step = 0; step < 20; ++step) sink.metric("train/loss", 1.0 / static_cast<double>(step + 1), step);
  }
  json cursor = json::object();
  for (int i = 0; i < 600 && cursor.value("metrics_lines", 0) < 20; ++i) {  // up to a minute on a busy machine
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cursor = json::parse(read_text(mlhost::mlflow_cursor_path(dir)), nullptr, false);
    if (cursor.is_discarded()) cursor = json::object();
  }
  ASSERT_EQ(cursor.value("metrics_lines", 0), 20) << cursor.dump(2);
  const json running = read_back(server.uri(), cursor["run_id"]);
  ASSERT_TRUE(running.is_object());
  EXPECT_EQ(running["status"], "RUNNING");
  EXPECT_EQ(running["metrics"]["train/loss"].size(), 20u);
  end_run_folder(dir, "cancelled");
  const SyncResult end = tracker.finish();
  ASSERT_TRUE(end.ok) << end.error;
  EXPECT_EQ(end.status_sent, "KILLED");
  EXPECT_EQ(read_back(server.uri(), cursor["run_id"])["status"], "KILLED");
}

// A folder that the launch did not write (it refused another run's folder) is never sent.
TEST(MlflowTracker, AFolderThisLaunchDidNotWriteIsNeverSent) {
  TempDir tmp("mlhost-mlflow-");
  const fs::path dir = tmp / "old";
  start_run_folder(dir);
  end_run_folder(dir, "completed");
  const auto old = fs::file_time_type::clock::now() - std::chrono::hours(1);
  fs::last_write_time(dir / "config.json", old);
  mlhost::MlflowTracking tracking = tracking_of("http://127.0.0.1:1");
  tracking.sync_interval = std::chrono::milliseconds(50);
  mlhost::RunTracker tracker(tracking, dir);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_TRUE(tracker.finish().ok);
  EXPECT_FALSE(fs::exists(dir / "tracking"));
}

// A server that answers with errors: the error names the URL, the HTTP status and the
// server's own message; nothing is marked sent.
TEST(MlflowErrors, AServerAnsweringErrorsIsNamedWithItsMessage) {
  TempDir tmp("mlhost-mlflow-");
  const int port = free_loopback_port_for_test();
  Child server({"/usr/bin/env", "python3", std::string(MLH_TEST_SOURCE_DIR) + "/tests/tracking/python/failing_server.py", std::to_string(port)},
               tmp / "server.log");
  const std::string uri = "http://127.0.0.1:" + std::to_string(port);
  const fs::path dir = tmp / "run";
  start_run_folder(dir);
  SyncResult r;
  for (int i = 0; i < 100; ++i) {  // until the server listens
    r = mlhost::sync_mlflow(dir, tracking_of(uri), SyncMode::kEnded);
    if (r.error.find("cannot be reached") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find(uri + "/api/2.0/mlflow/experiments/get-by-name"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("HTTP 500"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("INTERNAL_ERROR"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("the database is locked (test server)"), std::string::npos) << r.error;
  EXPECT_FALSE(json::parse(read_text(mlhost::mlflow_cursor_path(dir))).contains("run_id"));
}

}  // namespace
