// `host --track mlflow` and `host --sync-tracking RUN_DIR` end to end: the real host trains
// the ABI 1.0 test algorithm (plain C, no LibTorch: these run in every build) and sends the
// run to a real MLflow server (tests/common/mlflow_server.hpp), read back with MLflow's
// Python client. A tracker that is down or missing never changes the run's exit status or
// files.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "cli_harness.hpp"
#include "free_port.hpp"
#include "mlflow_server.hpp"
#include "mlh_test_paths.hpp"  // where this program finds its files

namespace mlhost::cli_test {
namespace {

const fs::path kReadRun = std::string(MLH_CLI_SOURCE_DIR) + "/tests/tracking/python/mlflow_read_run.py";

fs::path mlflow_program() { return mlflow_test::mlflow_program(MLH_CLI_SOURCE_DIR); }

class TrackingTest : public CliTest {
 protected:
  // extra without --hardware-config: none is read.
  Result train(const fs::path& run_dir, const std::vector<std::string>& extra, const RunOptions& options) {
    std::vector<std::string> args = {"--plugin-dir", case_dir("abi-v1-0-algo").string(), "--algorithm", "abi-v1-0-algo",
                                     "--run-dir", run_dir.string(), "--no-calibrate"};
    if (std::find(extra.begin(), extra.end(), "--hardware-config") == extra.end()) args.push_back("--no-hardware-config");
    args.insert(args.end(), extra.begin(), extra.end());
    return host(args, options);
  }
  static RunOptions tracking_env(const std::string& uri) {
    RunOptions o;
    o.env = {{"MLFLOW_TRACKING_URI", uri}, {"MLFLOW_EXPERIMENT_NAME", "cli-tests"}};
    return o;
  }
};

TEST_F(TrackingTest, TrackMlflowWithoutATrackingUriIsABadCommandLine) {
  RunOptions o;
  o.unset_env = {"MLFLOW_TRACKING_URI"};
  const Result r = train(tmp() / "run", {"--track", "mlflow"}, o);
  EXPECT_EQ(r.exit_code, 2) << r.describe();
  EXPECT_TRUE(contains(r.err, "MLFLOW_TRACKING_URI")) << r.describe();
  EXPECT_FALSE(fs::exists(tmp() / "run")) << "nothing is written before the run starts";
  const Result bad = host({"--algorithm", "x", "--track", "wandb"});
  EXPECT_EQ(bad.exit_code, 2) << bad.describe();
  EXPECT_TRUE(contains(bad.err, "--track 'wandb'")) << bad.describe();
  const Result nothing = host({"--sync-tracking", (tmp() / "none").string()}, tracking_env("http://127.0.0.1:1"));
  EXPECT_EQ(nothing.exit_code, 2) << nothing.describe();
  EXPECT_TRUE(contains(nothing.err, "holds no run")) << nothing.describe();
}

// The server is down during the run: the run completes as without --track, with a warning
// naming the server; `host --sync-tracking` sends it all once the server is up, and again
// sends nothing twice.
TEST_F(TrackingTest, ATrackerThatIsDownCostsTheRunNothingAndSyncTrackingSendsItLater) {
  ASSERT_TRUE(case_problem("abi-v1-0-algo").empty()) << case_problem("abi-v1-0-algo");
  const int port = free_loopback_port_for_test();
  const std::string uri = "http://127.0.0.1:" + std::to_string(port);
  const fs::path run_dir = tmp() / "run";
  const Result r = train(run_dir, {"--track", "mlflow"}, tracking_env(uri));
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  EXPECT_EQ(file_json(run_dir / "summary.json")["status"], "completed");
  EXPECT_TRUE(contains(r.err, "MLflow server " + uri + " cannot be reached")) << r.describe();
  EXPECT_TRUE(contains(r.err, "--sync-tracking " + run_dir.string())) << r.describe();
  const json cursor = file_json(run_dir / "tracking" / "mlflow.json");
  EXPECT_FALSE(cursor.contains("run_id")) << cursor.dump(2);
  EXPECT_EQ(cursor["tags"]["algorithm"], "abi-v1-0-algo") << cursor.dump(2);

  // Still down: --sync-tracking fails with the same warning, exit status 1.
  const Result still = host({"--sync-tracking", run_dir.string()}, tracking_env(uri));
  EXPECT_EQ(still.exit_code, 1) << still.describe();
  EXPECT_TRUE(contains(still.err, "cannot be reached")) << still.describe();

  if (!fs::exists(mlflow_program()))
    GTEST_SKIP() << "no mlflow at " << mlflow_program() << " (bash scripts/torch-venv.sh --peers; MLH_TEST_MLFLOW names another)";
  mlflow_test::Server server(mlflow_program(), tmp() / "server", port);
  ASSERT_EQ(server.wait_ready(), "");
  const Result sync = host({"--sync-tracking", run_dir.string()}, tracking_env(uri));
  ASSERT_EQ(sync.exit_code, 0) << sync.describe();
  EXPECT_TRUE(contains(sync.out, "status FINISHED")) << sync.describe();
  const Result again = host({"--sync-tracking", run_dir.string()}, tracking_env(uri));
  ASSERT_EQ(again.exit_code, 0) << again.describe();
  EXPECT_TRUE(contains(again.out, "sent 0 params, 0 metric points, 0 artifacts")) << again.describe();

  const std::string run_id = file_json(run_dir / "tracking" / "mlflow.json")["run_id"];
  const json run = mlflow_test::read_back(mlflow_program(), kReadRun, uri, run_id);
  ASSERT_TRUE(run.is_object()) << "mlflow_read_run.py failed";
  EXPECT_EQ(run["status"], "FINISHED");
  EXPECT_EQ(run["experiment_name"], "cli-tests");
  EXPECT_EQ(run["tags"]["algorithm"], "abi-v1-0-algo");
  EXPECT_EQ(run["tags"]["mlflow.runName"], "run");
  EXPECT_TRUE(run["params"].contains("plan.precision")) << run.dump(2);
  const std::vector<json> points = read_jsonl(run_dir / "metrics.jsonl");
  ASSERT_EQ(run["metrics"]["train/loss"].size(), points.size()) << run.dump(2);
  for (size_t i = 0; i < points.size(); ++i) {
    EXPECT_EQ(run["metrics"]["train/loss"][i][0], points[i]["step"]);
    EXPECT_DOUBLE_EQ(run["metrics"]["train/loss"][i][1].get<double>(), points[i]["value"].get<double>());
  }
  for (const char* f : {"config.json", "plan.json", "summary.json"}) EXPECT_TRUE(run["artifacts"].contains(f)) << f;

  // A run with the server up: sent while it runs and closed at its end, by the launcher.
  const fs::path live_dir = tmp() / "live";
  const Result live = train(live_dir, {"--track", "mlflow", "--mlflow-experiment", "cli-live"}, tracking_env(uri));
  ASSERT_EQ(live.exit_code, 0) << live.describe();
  EXPECT_FALSE(contains_any(live.err, {"cannot be reached", "refused"})) << live.describe();
  EXPECT_TRUE(contains(live.err, "MLflow tracking: run sent to " + uri)) << live.describe();
  const json live_cursor = file_json(live_dir / "tracking" / "mlflow.json");
  ASSERT_TRUE(live_cursor.contains("run_id")) << live_cursor.dump(2);
  const json live_run = mlflow_test::read_back(mlflow_program(), kReadRun, uri, live_cursor["run_id"]);
  ASSERT_TRUE(live_run.is_object());
  EXPECT_EQ(live_run["status"], "FINISHED");
  EXPECT_EQ(live_run["experiment_name"], "cli-live");
  EXPECT_EQ(live_run["metrics"]["train/loss"].size(), read_jsonl(live_dir / "metrics.jsonl").size());

  // An experiment whose artifact store is a path of the server's own (a standard `mlflow server
  // --default-artifact-root DIR`): the sync sends what the server can take and succeeds,
  // naming the files that stay and why.
  const std::string python = (mlflow_program().parent_path() / "python").string();
  const std::string make_experiment =
      "'" + python + "' -c \"import mlflow; mlflow.set_tracking_uri('" + uri + "'); mlflow.create_experiment('local', "
      "artifact_location='" + (tmp() / "elsewhere").string() + "')\" >/dev/null 2>&1";
  ASSERT_EQ(std::system(make_experiment.c_str()), 0) << make_experiment;
  RunOptions local = tracking_env(uri);
  local.env["MLFLOW_EXPERIMENT_NAME"] = "local";
  ASSERT_EQ(train(tmp() / "local", {}, local).exit_code, 0);
  const Result partial = host({"--sync-tracking", (tmp() / "local").string()}, local);
  EXPECT_EQ(partial.exit_code, 0) << partial.describe();
  EXPECT_TRUE(contains(partial.out, "status FINISHED")) << partial.describe();
  EXPECT_TRUE(contains(partial.err, "this server cannot take stay in " + (tmp() / "local").string()))
      << partial.describe();

  // The settings file's track key does what --track does; --track none turns it off.
  const fs::path ini = tmp() / "hw.ini";
  write_file(ini, "track = mlflow\nmlflow_experiment = from-ini\n");
  RunOptions no_name = tracking_env(uri);
  no_name.env.erase("MLFLOW_EXPERIMENT_NAME");
  const Result by_ini = train(tmp() / "ini", {"--hardware-config", ini.string()}, no_name);
  ASSERT_EQ(by_ini.exit_code, 0) << by_ini.describe();
  const json ini_cursor = file_json(tmp() / "ini" / "tracking" / "mlflow.json");
  EXPECT_EQ(ini_cursor["experiment_name"], "from-ini") << ini_cursor.dump(2);
  EXPECT_TRUE(ini_cursor.contains("run_id")) << ini_cursor.dump(2);
  const Result off = train(tmp() / "off", {"--hardware-config", ini.string(), "--track", "none"}, no_name);
  ASSERT_EQ(off.exit_code, 0) << off.describe();
  EXPECT_FALSE(fs::exists(tmp() / "off" / "tracking")) << off.describe();
}

// A run killed with SIGKILL after the tracker sent steps past its last checkpoint, then
// resumed: the resumed attempt logs those steps again, and the server still holds each step
// once, with the values the run's files end with (one thread: the resumed steps are
// bit-identical). The launcher syncs every 0.3 s here (MLH_TRACKING_INTERVAL_S).
class TrackingRestartTest : public ToyregTest {};

TEST_F(TrackingRestartTest, AKilledAndResumedRunHasEachStepOnceOnTheServer) {
  if (!fs::exists(mlflow_program()))
    GTEST_SKIP() << "no mlflow at " << mlflow_program() << " (bash scripts/torch-venv.sh --peers; MLH_TEST_MLFLOW names another)";
  const int port = free_loopback_port_for_test();
  const std::string uri = "http://127.0.0.1:" + std::to_string(port);
  mlflow_test::Server server(mlflow_program(), tmp() / "server", port);
  ASSERT_EQ(server.wait_ready(), "");
  const fs::path run = tmp() / "run";
  std::vector<std::string> args{host_path().string(), "--plugin-dir", toyreg_, "--algorithm", "toyreg",
                                "--run-dir", run.string(), "--device", "cpu", "--no-calibrate",
                                "--hardware-config", single_thread_settings(tmp()).string(), "--track", "mlflow",
                                "--set", "steps=200", "--set", "checkpoint_every=40", "--set", "step_delay_ms=100",
                                "--set", "lr=0.05", "--set", "seed=3", "--batch-size", "16"};
  RunOptions o;
  o.env = {{"MLFLOW_TRACKING_URI", uri}, {"MLFLOW_EXPERIMENT_NAME", "cli-restart"}, {"MLH_TRACKING_INTERVAL_S", "0.3"}};
  o.cwd = tmp();
  const fs::path cursor = run / "tracking" / "mlflow.json";
  auto sent_through = [&] {  // the highest train/loss step the server has
    const json c = json::parse(read_file(cursor), nullptr, false);
    return c.is_object() && c.contains("sent_steps") ? c["sent_steps"].value("train/loss", int64_t{-1}) : int64_t{-1};
  };
  {
    Process p(args, o);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
    while (sent_through() < 45 && p.running() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_TRUE(p.running()) << p.wait(Millis(0)).describe();
    ASSERT_GE(sent_through(), 45) << read_file(cursor);
    const std::vector<pid_t> host_children = children_of(p.pid());  // its worker and telemetry
    ASSERT_EQ(::kill(p.pid(), SIGKILL), 0);
    EXPECT_EQ(p.wait(Millis(30000)).signal, SIGKILL);
    for (pid_t child : host_children) ::waitpid(child, nullptr, 0);  // they die with the host (and come to us)
  }
  const int64_t sent_before_kill = sent_through();

  args.push_back("--resume");
  Process resumed(args, o);
  const Result r = resumed.wait(Millis(180000));
  ASSERT_EQ(r.exit_code, 0) << r.describe();
  const json superseded = file_json(run / "metrics.superseded.json");
  if (superseded.value("step", int64_t{1 << 30}) > sent_before_kill)
    GTEST_SKIP() << "the kill landed after checkpoint " << superseded.dump()
                 << ", past every step the server had (" << sent_before_kill << "): nothing was logged twice";

  const json back = mlflow_test::read_back(mlflow_program(), kReadRun, uri, file_json(cursor)["run_id"]);
  ASSERT_TRUE(back.is_object()) << "mlflow_read_run.py failed";
  EXPECT_EQ(back["status"], "FINISHED");
  std::map<int64_t, double> in_file;
  for (const json& row : read_jsonl(run / "metrics.jsonl"))
    if (row["name"] == "train/loss") in_file[row["step"].get<int64_t>()] = row["value"].get<double>();
  ASSERT_EQ(in_file.size(), 200u);
  const json& points = back["metrics"]["train/loss"];
  ASSERT_EQ(points.size(), in_file.size()) << "steps " << superseded["step"] << " to " << sent_before_kill
                                           << " were sent by both attempts";
  for (size_t i = 0; i < points.size(); ++i) {
    EXPECT_EQ(points[i][0].get<int64_t>(), static_cast<int64_t>(i));
    EXPECT_EQ(points[i][1].get<double>(), in_file[static_cast<int64_t>(i)]) << "step " << i;
  }
}

}  // namespace
}  // namespace mlhost::cli_test
