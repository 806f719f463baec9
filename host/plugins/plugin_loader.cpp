#include "plugins/plugin_loader.hpp"

#include <cstring>

#include "plugins/file_checks.hpp"

namespace mlhost {
namespace {

const char* status_name(mlh_status s) {
  switch (s) {
    case MLH_OK: return "ok";
    case MLH_ERR_INVALID_ARGUMENT: return "invalid argument";
    case MLH_ERR_UNSUPPORTED: return "unsupported";
    case MLH_ERR_UNAVAILABLE: return "unavailable";
    case MLH_ERR_VERSION: return "version mismatch";
    case MLH_ERR_OUT_OF_MEMORY: return "out of memory";
    case MLH_ERR_IO: return "I/O error";
    case MLH_ERR_CANCELLED: return "cancelled";
    case MLH_ERR_INTERNAL: return "internal error";
    default: return "error";
  }
}

int32_t kind_code(const std::string& kind) {
  return kind == "device" ? MLH_PLUGIN_KIND_DEVICE : MLH_PLUGIN_KIND_ALGORITHM;
}

const char* kind_word(int32_t kind) {
  return kind == MLH_PLUGIN_KIND_DEVICE ? "device" : kind == MLH_PLUGIN_KIND_ALGORITHM ? "algorithm" : "unknown";
}

// A string the plugin returned, read defensively: NULL or absurdly long is "".
std::string plugin_string(const char* s) {
  if (!s) return "";
  size_t n = strnlen(s, 256);
  return std::string(s, n);
}

// Boost.DLL reports a failed dlopen as "...load() failed (dlerror system message: <what the
// dynamic loader said>): <errno text>", where the errno text is left over from some earlier
// call (often "Bad file descriptor") and misleads: keep the loader's words alone.
std::string dynamic_loader_message(const std::string& what) {
  const std::string marker = "(dlerror system message: ";
  const size_t begin = what.find(marker);
  const size_t end = what.rfind(')');
  if (begin == std::string::npos || end == std::string::npos || end < begin + marker.size()) return what;
  return what.substr(begin + marker.size(), end - begin - marker.size());
}

}  // namespace

std::vector<mlh_abi_version> host_abi_versions() {
  return {mlh_abi_version{sizeof(mlh_abi_version), MLH_ABI_VERSION_MAJOR, MLH_ABI_VERSION_MINOR}};
}

std::string describe_error(mlh_status status, const mlh_error& error) {
  std::string msg(error.message, strnlen(error.message, sizeof error.message));
  return std::string(status_name(status)) + (msg.empty() ? "" : ": " + msg);
}

std::string check_negotiation(const std::vector<mlh_abi_version>& offered, const mlh_negotiate_response& answer,
                              const PluginManifest& manifest) {
  const mlh_abi_version* match = nullptr;
  for (const auto& v : offered)
    if (v.major == answer.abi_major) match = &v;
  const std::string chosen = std::to_string(answer.abi_major) + "." + std::to_string(answer.abi_minor);
  if (!match) {
    std::string list;
    for (const auto& v : offered) list += (list.empty() ? "" : ", ") + std::to_string(v.major) + ".x";
    return "plugin speaks ABI " + chosen + ", this host speaks " + list;
  }
  if (answer.abi_minor > match->minor)
    return "plugin chose ABI " + chosen + ", which the host did not offer (host has " +
           std::to_string(match->major) + "." + std::to_string(match->minor) + ")";
  if (answer.kind != kind_code(manifest.kind))
    return std::string("manifest and library disagree: manifest says a ") + manifest.kind +
           " plugin, the library is a " + kind_word(answer.kind) + " plugin";
  const std::string name = plugin_string(answer.name), version = plugin_string(answer.version);
  if (name != manifest.name)
    return "manifest and library disagree: manifest name '" + manifest.name + "', library name '" + name + "'";
  if (version != manifest.version)
    return "manifest and library disagree: manifest version '" + manifest.version + "', library version '" +
           version + "'";
  if (answer.table == nullptr) return "plugin returned no function table";
  return "";
}

LoadedPlugin load_plugin(const PluginManifest& manifest) {
  if (auto elf = check_elf_library(manifest.library_path)) throw PluginLoadError(*elf);

  LoadedPlugin p;
  p.manifest_ = manifest;
  try {
    p.library_ = std::make_shared<boost::dll::shared_library>(
        manifest.library_path.string(), boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  } catch (const std::exception& e) {
    const std::string path = manifest.library_path.string();
    std::string why = dynamic_loader_message(e.what());
    if (why.rfind(path + ": ", 0) == 0) why.erase(0, path.size() + 2);  // the loader names the file too
    throw PluginLoadError("cannot load '" + path + "': " + why);
  }
  if (!p.library_->has(MLH_ENTRY_SYMBOL))
    throw PluginLoadError(std::string("no entry symbol '") + MLH_ENTRY_SYMBOL +
                          "': not an mlhost plugin (was it built with MLH_DEVICE_PLUGIN / MLH_ALGORITHM_PLUGIN?)");
  auto negotiate = p.library_->get<std::remove_pointer_t<mlh_negotiate_fn>>(MLH_ENTRY_SYMBOL);

  const std::vector<mlh_abi_version> offered = host_abi_versions();
  const std::string host_version = MLHOST_VERSION;
  mlh_negotiate_request request{sizeof(mlh_negotiate_request), offered.data(),
                                static_cast<uint32_t>(offered.size()), kind_code(manifest.kind), "mlhost",
                                host_version.c_str()};
  mlh_negotiate_response& response = p.response_;
  response = mlh_negotiate_response{};
  response.struct_size = sizeof(mlh_negotiate_response);
  mlh_error err = make_error();
  mlh_status status = negotiate(&request, &response, &err);
  if (status != MLH_OK) throw PluginLoadError("plugin refused ABI negotiation: " + describe_error(status, err));
  if (std::string why = check_negotiation(offered, response, manifest); !why.empty()) throw PluginLoadError(why);

  // The table must hold at least every function of ABI 1.0, and the required ones set.
  if (manifest.kind == "device") {
    const auto* t = static_cast<const mlh_device_plugin*>(response.table);
    if (!MLH_HAS_FIELD(t, mlh_device_plugin, telemetry))
      throw PluginLoadError("device function table is smaller than ABI 1.0's (struct_size " +
                            std::to_string(t->struct_size) + ")");
    if (!t->create || !t->destroy || !t->probe)
      throw PluginLoadError("device function table lacks a required function (create, destroy or probe)");
  } else {
    const auto* t = static_cast<const mlh_algorithm_plugin*>(response.table);
    if (!MLH_HAS_FIELD(t, mlh_algorithm_plugin, run))
      throw PluginLoadError("algorithm function table is smaller than ABI 1.0's (struct_size " +
                            std::to_string(t->struct_size) + ")");
    if (!t->create || !t->destroy || !t->describe || !t->run)
      throw PluginLoadError("algorithm function table lacks a required function (create, destroy, describe or run)");
  }
  return p;
}

const mlh_device_plugin* LoadedPlugin::device_table() const {
  return manifest_.kind == "device" ? static_cast<const mlh_device_plugin*>(response_.table) : nullptr;
}

const mlh_algorithm_plugin* LoadedPlugin::algorithm_table() const {
  return manifest_.kind == "algorithm" ? static_cast<const mlh_algorithm_plugin*>(response_.table) : nullptr;
}

}  // namespace mlhost
