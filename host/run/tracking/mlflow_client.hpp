// The REST calls of an MLflow tracking server (MLflow 2.x/3.x, /api/2.0/mlflow/...) over
// libcurl: what the tracker needs and nothing more. Every failure is an MlflowError whose
// message names the URL and, when the server answered, its HTTP status and its own error
// message, so a warning built from it tells the user what to fix.
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace mlhost {

// Where the server is and how to log in, as MLflow's own clients take them from the
// environment: MLFLOW_TRACKING_URI, MLFLOW_TRACKING_TOKEN (bearer), MLFLOW_TRACKING_USERNAME
// and MLFLOW_TRACKING_PASSWORD (basic), MLFLOW_TRACKING_INSECURE_TLS,
// MLFLOW_TRACKING_SERVER_CERT_PATH.
struct MlflowServer {
  std::string uri;  // http(s)://host:port[/prefix]
  std::string token;
  std::string username, password;
  bool insecure_tls = false;
  std::string ca_file;
  long timeout_s = 30;        // a whole request
  long connect_timeout_s = 5;  // a server that is down should not hold a run's end for long
};

using TrackingEnv = std::function<const char*(const char*)>;

// From the environment, the URI normalized. It is empty when MLFLOW_TRACKING_URI is not set.
MlflowServer mlflow_server_from_env(const TrackingEnv& env);

// The one spelling of a tracking server's URI: scheme and host in lower case, no default
// port (80 for http, 443 for https), no trailing slash. "http://Host:80/" and
// "http://host" are one server, so a run folder synced to either is one MLflow run.
std::string normalized_tracking_uri(const std::string& uri);

// "" when the URI is one this client speaks (http or https), else why not.
std::string unsupported_tracking_uri(const std::string& uri);

class MlflowError : public std::runtime_error {
 public:
  MlflowError(const std::string& message, long http_status, std::string error_code)
      : std::runtime_error(message), http_status_(http_status), error_code_(std::move(error_code)) {}
  long http_status() const { return http_status_; }         // 0: no answer (unreachable, timeout)
  const std::string& error_code() const { return error_code_; }  // MLflow's, e.g. RESOURCE_DOES_NOT_EXIST

 private:
  long http_status_;
  std::string error_code_;
};

class MlflowClient {
 public:
  explicit MlflowClient(MlflowServer server);
  const MlflowServer& server() const { return server_; }

  // GET/POST <uri>/api/2.0/mlflow/<endpoint>: the answer's JSON. Throws MlflowError.
  nlohmann::json get(const std::string& endpoint, const std::map<std::string, std::string>& query);
  nlohmann::json post(const std::string& endpoint, const nlohmann::json& body);
  // PUT a file's bytes to <uri>/api/2.0/mlflow-artifacts/artifacts/<path> (the server's
  // artifact proxy). Throws MlflowError.
  void put_artifact(const std::string& path, const std::filesystem::path& file);

 private:
  nlohmann::json request(const std::string& method, const std::string& url, const std::string& body,
                         const std::filesystem::path& upload);

  MlflowServer server_;
};

}  // namespace mlhost
