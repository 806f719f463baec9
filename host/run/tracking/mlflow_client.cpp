#include "run/tracking/mlflow_client.hpp"

#include <cctype>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>

#include <curl/curl.h>

namespace mlhost {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// curl_global_init is not safe to race with other threads' first use: once per process.
void init_curl_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

size_t append_body(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// Percent-encodes one component; '/' is kept when `keep_slashes` (artifact paths).
std::string escape(CURL* curl, const std::string& s, bool keep_slashes) {
  std::string out;
  size_t start = 0;
  while (true) {
    const size_t slash = keep_slashes ? s.find('/', start) : std::string::npos;
    const std::string part = s.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    char* e = curl_easy_escape(curl, part.c_str(), static_cast<int>(part.size()));
    out += e ? e : "";
    curl_free(e);
    if (slash == std::string::npos) break;
    out += '/';
    start = slash + 1;
  }
  return out;
}

std::string base_url(const std::string& uri) {
  std::string u = uri;
  while (!u.empty() && u.back() == '/') u.pop_back();
  return u;
}

bool env_true(const char* v) {
  if (!v) return false;
  const std::string s(v);
  return s == "1" || s == "true" || s == "True" || s == "TRUE" || s == "yes";
}

}  // namespace

MlflowServer mlflow_server_from_env(const TrackingEnv& env) {
  auto get = [&](const char* name) -> std::string {
    const char* v = env(name);
    return v ? v : "";
  };
  MlflowServer s;
  s.uri = normalized_tracking_uri(get("MLFLOW_TRACKING_URI"));
  s.token = get("MLFLOW_TRACKING_TOKEN");
  s.username = get("MLFLOW_TRACKING_USERNAME");
  s.password = get("MLFLOW_TRACKING_PASSWORD");
  s.insecure_tls = env_true(env("MLFLOW_TRACKING_INSECURE_TLS"));
  s.ca_file = get("MLFLOW_TRACKING_SERVER_CERT_PATH");
  return s;
}

std::string normalized_tracking_uri(const std::string& uri) {
  const auto lower = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  const size_t colon = uri.find("://");
  if (colon == std::string::npos) return uri;  // not a URL: unsupported_tracking_uri says why
  const std::string scheme = lower(uri.substr(0, colon));
  const size_t start = colon + 3;
  const size_t end = std::min(uri.find_first_of("/?#", start), uri.size());
  std::string authority = uri.substr(start, end - start);
  std::string rest = uri.substr(end);
  const size_t at = authority.rfind('@');  // user:password@ keeps its case
  const std::string user = at == std::string::npos ? "" : authority.substr(0, at + 1);
  std::string host = lower(at == std::string::npos ? authority : authority.substr(at + 1));
  const std::string default_port = scheme == "http" ? ":80" : scheme == "https" ? ":443" : "";
  if (!default_port.empty() && host.size() > default_port.size() &&
      host.compare(host.size() - default_port.size(), std::string::npos, default_port) == 0)
    host.erase(host.size() - default_port.size());
  const size_t query = rest.find_first_of("?#");
  std::string path = rest.substr(0, query);
  while (!path.empty() && path.back() == '/') path.pop_back();
  return scheme + "://" + user + host + path + (query == std::string::npos ? "" : rest.substr(query));
}

std::string unsupported_tracking_uri(const std::string& uri) {
  if (uri.empty()) return "MLFLOW_TRACKING_URI is not set (it names the tracking server, e.g. http://127.0.0.1:5000)";
  if (uri.rfind("http://", 0) == 0 || uri.rfind("https://", 0) == 0) return "";
  return "tracking URI '" + uri + "' is not an http(s) URL of a tracking server (the host speaks MLflow's REST API; "
         "local ./mlruns folders, databricks and other schemes are not supported)";
}

MlflowClient::MlflowClient(MlflowServer server) : server_(std::move(server)) { init_curl_once(); }

json MlflowClient::get(const std::string& endpoint, const std::map<std::string, std::string>& query) {
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  std::string url = base_url(server_.uri) + "/api/2.0/mlflow/" + endpoint;
  char sep = '?';
  for (const auto& [k, v] : query) {
    url += sep + escape(curl.get(), k, false) + "=" + escape(curl.get(), v, false);
    sep = '&';
  }
  return request("GET", url, "", {});
}

json MlflowClient::post(const std::string& endpoint, const json& body) {
  // Non-finite metric values are not JSON numbers; MLflow's protobuf JSON parser takes
  // "NaN"/"Infinity"/"-Infinity" strings, which the caller puts in (dump() would write null).
  return request("POST", base_url(server_.uri) + "/api/2.0/mlflow/" + endpoint, body.dump(), {});
}

void MlflowClient::put_artifact(const std::string& path, const fs::path& file) {
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  request("PUT", base_url(server_.uri) + "/api/2.0/mlflow-artifacts/artifacts/" + escape(curl.get(), path, true), "",
          file);
}

json MlflowClient::request(const std::string& method, const std::string& url, const std::string& body,
                           const fs::path& upload) {
  std::unique_ptr<CURL, void (*)(CURL*)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) throw MlflowError("MLflow " + method + " " + url + ": cannot start a libcurl session", 0, "");
  CURL* c = curl.get();
  std::string answer;
  char error[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(c, CURLOPT_URL, url.c_str());
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &answer);
  curl_easy_setopt(c, CURLOPT_TIMEOUT, server_.timeout_s);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, server_.connect_timeout_s);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // called from a background thread: no SIGALRM for DNS timeouts
  curl_easy_setopt(c, CURLOPT_USERAGENT, "mlhost/" MLHOST_VERSION);
  if (server_.insecure_tls) {
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (!server_.ca_file.empty()) curl_easy_setopt(c, CURLOPT_CAINFO, server_.ca_file.c_str());
  struct curl_slist* headers = nullptr;
  std::unique_ptr<curl_slist, void (*)(curl_slist*)> header_list(nullptr, curl_slist_free_all);
  auto add_header = [&](const std::string& h) {
    headers = curl_slist_append(headers, h.c_str());
    header_list.release();
    header_list.reset(headers);
  };
  // MLflow's clients: a token wins over a user name and password.
  if (!server_.token.empty()) {
    add_header("Authorization: Bearer " + server_.token);
  } else if (!server_.username.empty()) {
    curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    curl_easy_setopt(c, CURLOPT_USERNAME, server_.username.c_str());
    curl_easy_setopt(c, CURLOPT_PASSWORD, server_.password.c_str());
  }
  std::unique_ptr<FILE, int (*)(FILE*)> file(nullptr, std::fclose);
  if (method == "POST") {
    add_header("Content-Type: application/json");
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  } else if (method == "PUT") {
    std::error_code ec;
    const auto size = fs::file_size(upload, ec);
    file.reset(std::fopen(upload.c_str(), "rb"));
    if (ec || !file) throw MlflowError("cannot read '" + upload.string() + "' to upload it to " + url, 0, "");
    add_header("Content-Type: application/octet-stream");
    curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(c, CURLOPT_READDATA, file.get());
    curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(size));
    // A large model takes longer than a metrics call: no whole-request limit, but a stall limit.
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 0L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, server_.timeout_s);
  }
  // Without it libcurl adds "Expect: 100-continue" to large bodies and waits for an answer
  // some proxies never give.
  add_header("Expect:");
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);

  const CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK)
    throw MlflowError("MLflow server " + server_.uri + " cannot be reached (" + method + " " + url +
                          "): " + (error[0] ? error : curl_easy_strerror(rc)),
                      0, "");
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  const json parsed = json::parse(answer, nullptr, /*allow_exceptions=*/false);
  if (status >= 200 && status < 300) return parsed.is_discarded() ? json::object() : parsed;
  // MLflow's errors: {"error_code": "...", "message": "..."}; anything else (a proxy's page)
  // is shown as its first few hundred characters.
  std::string code, message;
  if (parsed.is_object()) {
    code = parsed.value("error_code", "");
    message = parsed.value("message", "");
  }
  if (message.empty()) {
    message = answer.substr(0, 300);
    for (char& ch : message)
      if (ch == '\n' || ch == '\r') ch = ' ';
  }
  throw MlflowError("MLflow server " + server_.uri + " refused " + method + " " + url + ": HTTP " +
                        std::to_string(status) + (code.empty() ? "" : " " + code) +
                        (message.empty() ? "" : ": " + message),
                    status, code);
}

}  // namespace mlhost
