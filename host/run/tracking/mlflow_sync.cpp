#include "run/tracking/mlflow_sync.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "common/files.hpp"
#include "run/tensorboard.hpp"

namespace mlhost {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// MLflow's limits (mlflow/utils/validation.py).
constexpr size_t kMaxKeyLength = 250;
constexpr size_t kMaxParamValueLength = 6000;
constexpr size_t kMaxTagValueLength = 5000;
constexpr size_t kMetricsPerBatch = 1000;
constexpr size_t kParamsPerBatch = 100;

// The files sent as artifacts: during the run (small, written once at its start) and at its end.
const char* const kStartArtifacts[] = {"config.json", "plan.json"};
const char* const kEndArtifacts[] = {"config.json", "plan.json", "summary.json", "model.safetensors"};

int64_t mtime_ms(const fs::path& p) {
  std::error_code ec;
  const auto t = fs::last_write_time(p, ec);
  if (ec) return 0;
  // file_time_type's clock is not system_clock before C++20; the difference of "now"s maps it.
  const auto sys = std::chrono::system_clock::now() + (t - fs::file_time_type::clock::now());
  return std::chrono::duration_cast<std::chrono::milliseconds>(sys.time_since_epoch()).count();
}

json read_json(const fs::path& p) {
  std::ifstream in(p);
  if (!in) return json();
  return json::parse(in, nullptr, /*allow_exceptions=*/false);
}

// An exclusive lock on the folder's tracking state for one sync: the launcher's thread and a
// `host --sync-tracking` of the same folder must not both send the same lines.
class CursorLock {
 public:
  explicit CursorLock(const fs::path& file) {
    fd_ = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::runtime_error("cannot open '" + file.string() + "' to lock the tracking cursor");
    ::flock(fd_, LOCK_EX);
  }
  ~CursorLock() {
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }
  CursorLock(const CursorLock&) = delete;
  CursorLock& operator=(const CursorLock&) = delete;

 private:
  int fd_ = -1;
};

std::string user_name() {
  if (const char* u = std::getenv("USER"); u && *u) return u;
  if (const passwd* pw = ::getpwuid(::getuid())) return pw->pw_name;
  return "";
}

std::string as_text(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// A metric's value as MLflow's protobuf JSON parser takes it: non-finite ones as the strings
// it knows (a JSON number cannot hold them).
json metric_value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

std::string mlflow_status(const std::string& summary_status) {
  if (summary_status == "completed") return "FINISHED";
  if (summary_status == "cancelled" || summary_status == "preempted") return "KILLED";
  return "FAILED";
}

// "mlflow-artifacts:/1/<run>/artifacts" or "mlflow-artifacts://host:port/1/<run>/artifacts"
// -> "1/<run>/artifacts"; "" when the run's artifacts are not behind the server's proxy.
std::string proxied_artifact_path(const std::string& artifact_uri) {
  const std::string scheme = "mlflow-artifacts:";
  if (artifact_uri.rfind(scheme, 0) != 0) return "";
  std::string rest = artifact_uri.substr(scheme.size());
  if (rest.rfind("//", 0) == 0) {
    const size_t slash = rest.find('/', 2);
    rest = slash == std::string::npos ? "" : rest.substr(slash);
  }
  while (!rest.empty() && rest.front() == '/') rest.erase(rest.begin());
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  return rest;
}

class Syncer {
 public:
  Syncer(const fs::path& run_dir, const MlflowTracking& tracking, SyncMode mode)
      : dir_(run_dir), tracking_(tracking), mode_(mode), client_(tracking.server) {}

  SyncResult run() {
    // run_workers writes config.json, then plan.json: a sync between the two would send the
    // params without the plan's, and params are sent once.
    if (!fs::exists(dir_ / "config.json") || !fs::exists(dir_ / "plan.json")) {
      result_.ok = true;  // the run has not written its folder yet: nothing to send
      return result_;
    }
    fs::create_directories(dir_ / "tracking");
    CursorLock lock(dir_ / "tracking" / ".lock");
    load_cursor();
    try {
      ensure_experiment();
      ensure_run();
      send_params();
      send_metrics();
      send_artifacts();
      send_status();
      result_.ok = true;
    } catch (const MlflowError& e) {
      result_.error = e.what();
    }
    result_.run_id = cursor_.value("run_id", "");
    result_.experiment_id = cursor_.value("experiment_id", "");
    return result_;
  }

 private:
  void load_cursor() {
    const json c = read_json(mlflow_cursor_path(dir_));
    // One server however its URI is spelled (a trailing slash, the default port, upper case).
    if (c.is_object() &&
        normalized_tracking_uri(c.value("tracking_uri", "")) == normalized_tracking_uri(tracking_.server.uri)) {
      cursor_ = c;
    } else {
      if (c.is_object() && c.contains("run_id"))
        result_.notes.push_back("the cursor was for the tracking server " + c.value("tracking_uri", std::string("?")) +
                                "; starting a new MLflow run on " + tracking_.server.uri);
      cursor_ = {{"tracking_uri", tracking_.server.uri}, {"metrics_offset", 0}, {"metrics_lines", 0},
                 {"params_sent", false}, {"artifacts", json::object()}, {"tags", json::object()}};
    }
    for (const auto& [k, v] : tracking_.tags) cursor_["tags"][k] = v;
    save_cursor();
  }

  void save_cursor() { write_file_atomically(mlflow_cursor_path(dir_), cursor_.dump(2) + "\n"); }

  void ensure_experiment() {
    if (cursor_.contains("experiment_id")) return;
    std::string id;
    const std::string& name = tracking_.experiment_name;
    if (name.empty()) {
      id = tracking_.experiment_id.empty() ? "0" : tracking_.experiment_id;  // MLflow's Default experiment
    } else {
      id = experiment_by_name(name);
      if (id.empty()) {
        try {
          id = client_.post("experiments/create", {{"name", name}}).value("experiment_id", "");
        } catch (const MlflowError& e) {
          if (e.error_code() != "RESOURCE_ALREADY_EXISTS") throw;
          id = experiment_by_name(name);  // another client made it meanwhile
        }
      }
      if (id.empty()) throw MlflowError("MLflow server " + tracking_.server.uri + " gave no id for experiment '" + name + "'", 0, "");
    }
    cursor_["experiment_name"] = name;
    cursor_["experiment_id"] = id;
    save_cursor();
  }

  std::string experiment_by_name(const std::string& name) {
    try {
      const json e = client_.get("experiments/get-by-name", {{"experiment_name", name}});
      return e.value("experiment", json::object()).value("experiment_id", "");
    } catch (const MlflowError& e) {
      if (e.error_code() == "RESOURCE_DOES_NOT_EXIST") return "";
      throw;
    }
  }

  json tag(const std::string& key, const std::string& value) {
    std::string v = value;
    if (v.size() > kMaxTagValueLength) v = v.substr(0, kMaxTagValueLength);
    return {{"key", mlflow_key(key)}, {"value", v}};
  }

  void ensure_run() {
    if (cursor_.contains("run_id")) return;
    const json plan = read_json(dir_ / "plan.json");
    const json summary = read_json(dir_ / "summary.json");
    const std::string run_name = dir_.filename().empty() ? dir_.parent_path().filename().string() : dir_.filename().string();
    json tags = json::array({tag("mlflow.runName", run_name), tag("mlflow.source.name", "mlhost"),
                             tag("mlflow.source.type", "LOCAL"), tag("host_version", MLHOST_VERSION),
                             tag("run_dir", fs::absolute(dir_).lexically_normal().string())});
    if (const std::string user = user_name(); !user.empty()) tags.push_back(tag("mlflow.user", user));
    json known = cursor_["tags"];
    if (plan.is_object() && plan.value("device", json()).is_string() && !known.contains("device"))
      known["device"] = plan["device"];
    if (plan.is_object() && plan.value("device_name", json()).is_string() && !known.contains("device_name"))
      known["device_name"] = plan["device_name"];
    if (summary.is_object())
      for (const char* k : {"algorithm", "command"})
        if (summary.value(k, json()).is_string() && !known.contains(k)) known[k] = summary[k];
    for (const auto& [k, v] : known.items()) tags.push_back(tag(k, as_text(v)));
    const json answer = client_.post("runs/create", {{"experiment_id", cursor_["experiment_id"]},
                                                      {"run_name", run_name},
                                                      {"start_time", mtime_ms(dir_ / "config.json")},
                                                      {"tags", tags}});
    const json info = answer.value("run", json::object()).value("info", json::object());
    const std::string run_id = info.value("run_id", info.value("run_uuid", ""));
    if (run_id.empty())
      throw MlflowError("MLflow server " + tracking_.server.uri + " made a run but gave no run id: " + answer.dump(), 0, "");
    cursor_["run_id"] = run_id;
    cursor_["artifact_uri"] = info.value("artifact_uri", "");
    cursor_["status"] = "RUNNING";
    save_cursor();
  }

  void send_params() {
    if (cursor_.value("params_sent", false)) return;
    json flat = flatten_hparams(read_json(dir_ / "config.json"));
    const json plan = read_json(dir_ / "plan.json");
    if (plan.is_object()) flat.update(flatten_hparams(plan, "plan"));
    json params = json::array();
    for (const auto& [k, v] : flat.items()) {
      const std::string key = mlflow_key(k);
      if (key != k) result_.notes.push_back("param '" + k + "' sent as '" + key + "' (MLflow's key rules)");
      bool truncated = false;
      const std::string value = mlflow_param_value(as_text(v), &truncated);
      if (truncated)
        result_.notes.push_back("param '" + k + "' truncated to " + std::to_string(kMaxParamValueLength) +
                                " characters (MLflow's limit); the whole value is in the run folder");
      params.push_back({{"key", key}, {"value", value}});
    }
    for (size_t i = 0; i < params.size(); i += kParamsPerBatch) {
      json chunk = json::array();
      for (size_t j = i; j < std::min(params.size(), i + kParamsPerBatch); ++j) chunk.push_back(params[j]);
      // Params are immutable on the server: sending one again with the same value (a retry
      // after a partial failure) is accepted.
      client_.post("runs/log-batch", {{"run_id", cursor_["run_id"]}, {"params", chunk}});
      result_.params_sent += static_cast<int64_t>(chunk.size());
    }
    cursor_["params_sent"] = true;
    save_cursor();
  }

  // A batch an earlier attempt posted without recording that the server took it (killed
  // between the two): per metric, the steps up to the highest the server holds count as sent
  // and are not sent again, whether or not the resumed run rewinds past them.
  void resolve_in_flight() {
    if (!cursor_.contains("in_flight")) return;
    for (const auto& metric : cursor_["in_flight"].items()) {
      const std::string& name = metric.key();
      int64_t held = -1;
      std::string page;
      do {
        std::map<std::string, std::string> query{{"run_id", cursor_["run_id"].get<std::string>()},
                                                 {"metric_key", mlflow_key(name)}};
        if (!page.empty()) query["page_token"] = page;
        const json history = client_.get("metrics/get-history", query);
        for (const json& point : history.value("metrics", json::array()))
          held = std::max(held, point.value("step", int64_t{-1}));
        page = history.value("next_page_token", std::string());
      } while (!page.empty());
      if (held < 0) continue;
      cursor_["sent_steps"][name] = std::max(held, cursor_["sent_steps"].value(name, held));
      cursor_["resent_skip"][name] = std::max(held, cursor_["resent_skip"].value(name, held));
    }
    cursor_.erase("in_flight");
    save_cursor();
  }

  void send_metrics() {
    const fs::path file = dir_ / "metrics.jsonl";
    std::ifstream in(file, std::ios::binary);
    if (!in) return;
    int64_t offset = cursor_.value("metrics_offset", int64_t{0});
    int64_t lines = cursor_.value("metrics_lines", int64_t{0});
    // Per metric, the highest step the server has of it (sent_steps), and after a rewind the
    // steps it already had then (resent_skip).
    if (!cursor_.value("sent_steps", json()).is_object()) cursor_["sent_steps"] = json::object();
    if (!cursor_.value("resent_skip", json()).is_object()) cursor_["resent_skip"] = json::object();
    resolve_in_flight();
    // A resumed attempt dropped the rows its predecessor logged past the checkpoint
    // (run/run_sink.hpp) and logs those steps again: carry on from where the file now ends
    // before its own rows, but skip the points of each metric up to the step the server already
    // has (MLflow cannot delete or replace a point, and a second one at the same step would be
    // a duplicate). A resumed run computes those steps again from the same checkpoint, so the
    // server's values are the ones the run would have logged.
    std::ifstream superseded_in(dir_ / "metrics.superseded.json");
    const json superseded = json::parse(superseded_in, nullptr, /*allow_exceptions=*/false);
    if (superseded.is_object() && superseded.value("jsonl_bytes", json()).is_number_integer() &&
        cursor_.value("superseded", json()) != superseded) {
      offset = std::min(offset, superseded["jsonl_bytes"].get<int64_t>());
      cursor_["superseded"] = superseded;
      cursor_["metrics_offset"] = offset;
      for (const auto& [name, step] : cursor_["sent_steps"].items())
        cursor_["resent_skip"][name] = std::max(step.get<int64_t>(), cursor_["resent_skip"].value(name, step.get<int64_t>()));
    }
    const json& resent_skip = cursor_["resent_skip"];
    std::map<std::string, int64_t> batch_steps;  // the batch's highest step per metric, kept in the cursor when sent
    in.seekg(offset);
    // Lines written before metrics.jsonl carried wall_time: the time since the start added to
    // when config.json was written (the run's start).
    const double start_s = static_cast<double>(mtime_ms(dir_ / "config.json")) / 1000.0;
    json batch = json::array();
    int64_t batch_bytes = 0, batch_lines = 0;
    auto flush = [&] {
      if (batch.empty() && batch_lines == 0) return;
      if (!batch.empty()) {
        // Recorded before the post: an attempt killed after the server took the batch and before
        // the cursor below says so leaves this, and the next attempt asks the server.
        cursor_["in_flight"] = batch_steps;
        save_cursor();
        client_.post("runs/log-batch", {{"run_id", cursor_["run_id"]}, {"metrics", batch}});
      }
      result_.metrics_sent += static_cast<int64_t>(batch.size());
      offset += batch_bytes;
      lines += batch_lines;
      for (const auto& [name, step] : batch_steps)
        cursor_["sent_steps"][name] = std::max(step, cursor_["sent_steps"].value(name, step));
      batch_steps.clear();
      cursor_.erase("in_flight");
      cursor_["metrics_offset"] = offset;
      cursor_["metrics_lines"] = lines;
      save_cursor();
      batch = json::array();
      batch_bytes = batch_lines = 0;
    };
    std::string line;
    while (std::getline(in, line)) {
      if (in.eof()) break;  // no newline yet: the worker is still writing this line
      batch_bytes += static_cast<int64_t>(line.size()) + 1;
      ++batch_lines;
      const json m = json::parse(line, nullptr, false);
      if (m.is_object() && m.value("name", json()).is_string() && m.contains("value") && m.contains("step")) {
        const double value = m["value"].is_number() ? m["value"].get<double>() : std::nan("");
        const double wall = m.value("wall_time", json()).is_number() ? m["wall_time"].get<double>()
                                                                     : start_s + m.value("time", 0.0);
        const std::string name = m["name"].get<std::string>();
        const int64_t step = m["step"].is_number_integer() ? m["step"].get<int64_t>() : int64_t{0};
        if (!(resent_skip.contains(name) && step <= resent_skip[name].get<int64_t>())) {
          batch.push_back({{"key", mlflow_key(name)},
                           {"value", metric_value(value)},
                           {"timestamp", static_cast<int64_t>(std::llround(wall * 1000.0))},
                           {"step", step}});
          batch_steps[name] = std::max(step, batch_steps.count(name) ? batch_steps[name] : step);
        }
      }
      if (batch.size() >= kMetricsPerBatch) flush();
    }
    flush();
  }

  void send_artifacts() {
    const bool ended = mode_ == SyncMode::kEnded && fs::exists(dir_ / "summary.json");
    const std::string base = proxied_artifact_path(cursor_.value("artifact_uri", ""));
    bool warned = false;
    auto send = [&](const char* name) {
      const fs::path file = dir_ / name;
      std::error_code ec;
      if (!fs::is_regular_file(file, ec)) return;
      // Sent again when it changed (a resumed run rewrites config.json, plan.json, the model).
      const json stamp = {{"size", static_cast<int64_t>(fs::file_size(file, ec))}, {"mtime_ms", mtime_ms(file)}};
      if (cursor_["artifacts"].value(name, json()) == stamp) return;
      if (base.empty()) {
        if (!warned) {
          result_.artifacts_not_sent_why =
              "the run's artifact store is '" + cursor_.value("artifact_uri", std::string()) +
              "', not the server's artifact proxy (mlflow-artifacts:, what `mlflow server` uses with "
              "--serve-artifacts, its default, and --artifacts-destination); the files stay in the run folder";
          result_.notes.push_back("artifacts not sent: " + result_.artifacts_not_sent_why);
        }
        warned = true;
        result_.artifacts_not_sent.push_back(name);
        return;
      }
      client_.put_artifact(base + "/" + name, file);
      cursor_["artifacts"][name] = stamp;
      ++result_.artifacts_sent;
      save_cursor();
    };
    if (ended)
      for (const char* name : kEndArtifacts) send(name);
    else
      for (const char* name : kStartArtifacts) send(name);
  }

  void send_status() {
    const std::string last = cursor_.value("status", "");
    if (mode_ == SyncMode::kLive) {
      // A resumed run that an earlier launch had closed is running again.
      if (last != "RUNNING") update("RUNNING", std::nullopt);
      return;
    }
    const json summary = read_json(dir_ / "summary.json");
    if (!summary.is_object()) return;  // no end recorded: leave the status as it is
    const std::string status = mlflow_status(summary.value("status", ""));
    const int64_t end = mtime_ms(dir_ / "summary.json");
    if (last == status && cursor_.value("end_time", int64_t{0}) == end) return;
    update(status, end);
  }

  void update(const std::string& status, std::optional<int64_t> end_time) {
    json body = {{"run_id", cursor_["run_id"]}, {"status", status}};
    if (end_time) body["end_time"] = *end_time;
    client_.post("runs/update", body);
    cursor_["status"] = status;
    if (end_time) cursor_["end_time"] = *end_time;
    result_.status_sent = status;
    save_cursor();
  }

  fs::path dir_;
  const MlflowTracking& tracking_;
  SyncMode mode_;
  MlflowClient client_;
  json cursor_;
  SyncResult result_;
};

}  // namespace

MlflowTracking mlflow_tracking_from_env(const TrackingEnv& env, const std::string& experiment_option) {
  MlflowTracking t;
  t.server = mlflow_server_from_env(env);
  const char* name = env("MLFLOW_EXPERIMENT_NAME");
  const char* id = env("MLFLOW_EXPERIMENT_ID");
  t.experiment_name = !experiment_option.empty() ? experiment_option : name ? name : "";
  t.experiment_id = id ? id : "";
  if (const char* interval = env("MLH_TRACKING_INTERVAL_S"); interval && *interval) {
    char* end = nullptr;
    const double seconds = std::strtod(interval, &end);
    if (end == interval || *end != '\0' || !(seconds >= 0.1 && seconds <= 86400))
      t.interval_error = std::string("MLH_TRACKING_INTERVAL_S='") + interval +
                         "' is not a number of seconds from 0.1 to 86400 (how often the run is sent while it trains)";
    else
      t.sync_interval = std::chrono::milliseconds(std::llround(seconds * 1000.0));
  }
  return t;
}

fs::path mlflow_cursor_path(const fs::path& run_dir) { return run_dir / "tracking" / "mlflow.json"; }

std::string mlflow_key(const std::string& key) {
  std::string out;
  for (char c : key) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '-' || c == '.' || c == '/' || c == ' ';
    out += ok ? c : '_';
  }
  if (out.size() > kMaxKeyLength) out.resize(kMaxKeyLength);
  return out;
}

std::string mlflow_param_value(const std::string& value, bool* truncated) {
  if (truncated) *truncated = value.size() > kMaxParamValueLength;
  if (value.size() <= kMaxParamValueLength) return value;
  // Cut on a UTF-8 character boundary: the server counts characters, a cut byte is no text.
  size_t cut = kMaxParamValueLength;
  while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80) --cut;
  return value.substr(0, cut);
}

SyncResult sync_mlflow(const fs::path& run_dir, const MlflowTracking& tracking, SyncMode mode) {
  if (const std::string why = unsupported_tracking_uri(tracking.server.uri); !why.empty()) {
    SyncResult r;
    r.error = why;
    return r;
  }
  return Syncer(run_dir, tracking, mode).run();
}

}  // namespace mlhost
