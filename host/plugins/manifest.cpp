#include "plugins/manifest.hpp"

#include <fstream>
#include <sstream>

namespace mlhost {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::filesystem::path& origin, const std::string& what) {
  throw ManifestError("plugin manifest '" + origin.string() + "': " + what);
}

const json& require(const json& obj, const char* field, json::value_t type, const char* type_name,
                    const std::filesystem::path& origin) {
  auto it = obj.find(field);
  if (it == obj.end()) fail(origin, std::string("field '") + field + "' is missing");
  bool ok = it->type() == type ||
            (type == json::value_t::number_unsigned && it->type() == json::value_t::number_integer &&
             it->get<int64_t>() >= 0);
  if (!ok) fail(origin, std::string("field '") + field + "' must be " + type_name + ", got " + it->dump());
  return *it;
}

uint32_t require_version_number(const json& abi, const char* field, const std::filesystem::path& origin) {
  auto it = abi.find(field);
  if (it == abi.end()) fail(origin, std::string("field 'abi.") + field + "' is missing");
  const json& v = *it;
  if (!v.is_number_integer() || v.get<int64_t>() < 0)
    fail(origin, std::string("field 'abi.") + field + "' must be a non-negative integer, got " + v.dump());
  uint64_t n = v.get<uint64_t>();
  if (n > 0xFFFFu) fail(origin, std::string("field 'abi.") + field + "' is out of range: " + v.dump());
  return static_cast<uint32_t>(n);
}

}  // namespace

bool is_valid_plugin_name(const std::string& name) {
  if (name.empty() || name.size() > 64 || !(name[0] >= 'a' && name[0] <= 'z')) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

PluginManifest parse_manifest(const std::string& text, const std::filesystem::path& origin) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, or out_of_range for a number too large
    fail(origin, std::string("invalid JSON: ") + e.what());
  }
  if (!doc.is_object()) fail(origin, "must be a JSON object");

  PluginManifest m;
  m.manifest_path = origin;
  const json& mv = require(doc, "manifest_version", json::value_t::number_unsigned, "an integer", origin);
  if (mv.get<uint64_t>() != 1) fail(origin, "field 'manifest_version' is " + mv.dump() + ", this host reads 1");

  m.kind = require(doc, "kind", json::value_t::string, "a string", origin).get<std::string>();
  if (m.kind != "device" && m.kind != "algorithm")
    fail(origin, "field 'kind' must be \"device\" or \"algorithm\", got \"" + m.kind + "\"");
  m.name = require(doc, "name", json::value_t::string, "a string", origin).get<std::string>();
  if (!is_valid_plugin_name(m.name))
    fail(origin, "field 'name' \"" + m.name + "\" must match [a-z][a-z0-9_-]* (at most 64 characters)");
  m.version = require(doc, "version", json::value_t::string, "a string", origin).get<std::string>();
  if (m.version.empty()) fail(origin, "field 'version' is empty");

  const json& abi = require(doc, "abi", json::value_t::object, "an object", origin);
  m.abi_major = require_version_number(abi, "major", origin);
  m.abi_minor = require_version_number(abi, "minor", origin);

  std::string library = require(doc, "library", json::value_t::string, "a string", origin).get<std::string>();
  std::filesystem::path lib(library);
  // The library must sit beside its manifest: a manifest cannot point the host at code
  // somewhere else on the machine.
  if (library.empty() || lib.has_parent_path() || library == "." || library == "..")
    fail(origin, "field 'library' must be a file name in the manifest's folder, got \"" + library + "\"");
  m.library_path = origin.parent_path() / lib;

  if (auto it = doc.find("description"); it != doc.end()) {
    if (!it->is_string()) fail(origin, "field 'description' must be a string");
    m.description = it->get<std::string>();
  }
  if (auto it = doc.find("build"); it != doc.end()) {
    if (!it->is_object()) fail(origin, "field 'build' must be an object");
    m.build = *it;
    if (auto a = it->find("arch"); a != it->end() && a->is_string()) m.build_arch = a->get<std::string>();
    if (auto t = it->find("torch"); t != it->end() && !t->is_null()) {
      if (!t->is_object()) fail(origin, "field 'build.torch' must be an object or null");
      if (auto v = t->find("version"); v != t->end() && v->is_string()) m.torch_version = v->get<std::string>();
      else fail(origin, "field 'build.torch.version' must be a string");
      if (auto b = t->find("backends"); b != t->end()) {
        if (!b->is_array()) fail(origin, "field 'build.torch.backends' must be an array of LibTorch device types");
        for (const json& type : *b) {
          if (!type.is_string() || type.get<std::string>().empty())
            fail(origin, "field 'build.torch.backends' holds " + type.dump() + ", not a LibTorch device type");
          m.torch_backends.push_back(type.get<std::string>());
        }
      } else {
        // An older SDK's manifest: a "cuda" flag, and MPS where it was built on macOS.
        m.torch_backends.push_back("cpu");
        if (auto c = t->find("cuda"); c != t->end()) {
          if (!c->is_boolean()) fail(origin, "field 'build.torch.cuda' must be true or false");
          if (c->get<bool>()) m.torch_backends.push_back("cuda");
        }
        if (it->value("system", std::string()) == "Darwin") m.torch_backends.push_back("mps");
      }
      if (auto d = t->find("distributed"); d != t->end()) {
        if (!d->is_array()) fail(origin, "field 'build.torch.distributed' must be an array of backend names");
        std::vector<std::string> backends;
        for (const json& b : *d) {
          if (!b.is_string()) fail(origin, "field 'build.torch.distributed' holds " + b.dump() + ", not a backend name");
          backends.push_back(b.get<std::string>());
        }
        m.torch_distributed = std::move(backends);
      }
    }
  }
  return m;
}

PluginManifest read_manifest(const std::filesystem::path& manifest_path) {
  std::ifstream in(manifest_path, std::ios::binary);
  if (!in) fail(manifest_path, "cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  // A manifest is a few hundred bytes; refuse anything absurd before parsing it.
  if (text.str().size() > 1 << 20) fail(manifest_path, "is larger than 1 MiB");
  return parse_manifest(text.str(), manifest_path);
}

nlohmann::json manifest_to_json(const PluginManifest& m) {
  return {{"kind", m.kind},
          {"name", m.name},
          {"version", m.version},
          {"abi", std::to_string(m.abi_major) + "." + std::to_string(m.abi_minor)},
          {"description", m.description},
          {"manifest", m.manifest_path.string()},
          {"library", m.library_path.string()},
          {"build", m.build}};
}

}  // namespace mlhost
