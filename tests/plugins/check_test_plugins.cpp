// A standalone check of every fault-injection test plugin, without the host: each case's
// manifest says what README.md says, each library loads (or fails to load) with plain
// dlopen/dlsym, and negotiate/probe answer what the case promises. The cases that kill or
// hang the caller (crash, hang, abort, throw-raw) are only loaded and negotiated in this
// process; their probe runs in a forked child whose end is checked.
#include <dlfcn.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <fcntl.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <mlh/mlh.h>

#include "test_plugins.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

struct Case {
  const char* dir;   // folder under MLH_TEST_PLUGIN_ROOT
  const char* name;  // manifest name; the library is libmlhost-<name>.so
  int abi_major;     // what the manifest claims
};

const Case kCases[] = {
    {"crash", "crash", 1},
    {"hang", "hang", 1},
    {"abort", "abort", 1},
    {"throw-helper", "throw-helper", 1},
    {"throw-raw", "throw-raw", 1},
    {"wrong-major", "wrong-major", 1},
    {"wrong-major-refuse", "wrong-major-refuse", 2},
    {"no-entry", "no-entry", 1},
    {"not-elf", "not-elf", 1},
    {"undefined-symbol", "undefined-symbol", 1},
    {"wrong-arch", "wrong-arch", 1},
    {"name-mismatch", "manifest-name", 1},
    {"malformed-null-name", "malformed-null-name", 1},
    {"malformed-size", "malformed-size", 1},
    {"malformed-count", "malformed-count", 1},
    {"malformed-class", "malformed-class", 1},
    {"wrong-kind", "wrong-kind", 1},
    {"slow-good", "slowgood", 1},
    {"good-gpu", "fakegpu", 1},
    {"dup-cpu", "cpu", 1},
    {"cpuset", "cpuset", 1},
    {"cgood", "cgood", 1},
    {"abi-v1-0", "abi-v1-0", 1},
};

fs::path case_dir(const std::string& dir) { return fs::path(MLH_TEST_PLUGIN_ROOT) / dir; }
fs::path library_path(const std::string& dir, const std::string& name) {
  return case_dir(dir) / ("libmlhost-" + name + ".so");
}

json read_json(const fs::path& p) {
  std::ifstream in(p);
  if (!in) throw std::runtime_error("cannot open " + p.string());
  return json::parse(in);
}

std::vector<unsigned char> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<unsigned char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

unsigned e_machine(const std::vector<unsigned char>& b) {
  if (b.size() < 20) return 0;
  return b[5] == 2 ? (b[18] << 8) | b[19] : b[18] | (b[19] << 8);
}

// A dlopen'ed library, closed at the end of the scope.
struct Library {
  void* handle = nullptr;
  std::string error;
  explicit Library(const fs::path& p) {
    handle = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) error = dlerror();
  }
  ~Library() {
    if (handle) dlclose(handle);
  }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  mlh_negotiate_fn entry() const {
    return handle ? reinterpret_cast<mlh_negotiate_fn>(dlsym(handle, MLH_ENTRY_SYMBOL)) : nullptr;
  }
};

struct Answer {
  mlh_status status = -1;
  mlh_negotiate_response response{};
  mlh_error error{};
};

// Negotiates the way the host does: offers 1.<our minor>, loading a device plugin.
Answer negotiate(mlh_negotiate_fn fn) {
  mlh_abi_version offered{sizeof(mlh_abi_version), MLH_ABI_VERSION_MAJOR, MLH_ABI_VERSION_MINOR};
  mlh_negotiate_request request{};
  request.struct_size = sizeof(request);
  request.versions = &offered;
  request.version_count = 1;
  request.expected_kind = MLH_PLUGIN_KIND_DEVICE;
  request.host_name = "mlhost";
  request.host_version = "test";
  Answer a;
  a.response.struct_size = sizeof(a.response);
  a.error.struct_size = sizeof(a.error);
  a.status = fn(&request, &a.response, &a.error);
  return a;
}

// Loads a case, checks the entry symbol and a successful device negotiation.
struct Negotiated {
  std::unique_ptr<Library> lib;
  Answer answer;
  const mlh_device_plugin* table = nullptr;
};

Negotiated load_device_at(const fs::path& path) {
  Negotiated n;
  n.lib = std::make_unique<Library>(path);
  EXPECT_NE(n.lib->handle, nullptr) << n.lib->error;
  mlh_negotiate_fn fn = n.lib->entry();
  EXPECT_NE(fn, nullptr) << path << ": no " << MLH_ENTRY_SYMBOL;
  if (!fn) return n;
  n.answer = negotiate(fn);
  EXPECT_EQ(n.answer.status, MLH_OK) << n.answer.error.message;
  EXPECT_EQ(n.answer.response.abi_major, 1u);
  EXPECT_EQ(n.answer.response.kind, MLH_PLUGIN_KIND_DEVICE);
  if (n.answer.status == MLH_OK) n.table = static_cast<const mlh_device_plugin*>(n.answer.response.table);
  EXPECT_NE(n.table, nullptr);
  if (n.table) {
    EXPECT_GE(n.table->struct_size, sizeof(mlh_device_plugin));
    EXPECT_NE(n.table->create, nullptr);
    EXPECT_NE(n.table->destroy, nullptr);
    EXPECT_NE(n.table->probe, nullptr);
  }
  return n;
}

Negotiated load_device(const std::string& dir, const std::string& name) {
  return load_device_at(library_path(dir, name));
}

// Calls create + probe and hands the records to `check` before destroy.
mlh_status probe(const mlh_device_plugin* t, mlh_error& error,
                 const std::function<void(const mlh_device_record*, uint32_t)>& check) {
  error = mlh_error{};
  error.struct_size = sizeof(error);
  mlh_plugin_instance* inst = nullptr;
  mlh_status s = t->create(&inst, &error);
  if (s != MLH_OK) return s;
  const mlh_device_record* records = nullptr;
  uint32_t count = 0;
  s = t->probe(inst, &records, &count, &error);
  if (s == MLH_OK) check(records, count);
  t->destroy(inst);
  return s;
}

// --- children: the cases that end the caller ---------------------------------------------

struct ChildEnd {
  bool timed_out = false;
  bool exited = false;
  int exit_code = -1;
  int signal = 0;
};

// Runs f in a forked child (no core dump, stderr silenced) and waits up to `timeout`; a child
// still running then is killed and reported as timed out.
ChildEnd run_in_child(const std::function<void()>& f, std::chrono::milliseconds timeout) {
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) dup2(devnull, STDERR_FILENO);
    f();
    _exit(0);
  }
  ChildEnd end;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  int status = 0;
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      end.timed_out = true;
      return end;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFEXITED(status)) {
    end.exited = true;
    end.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    end.signal = WTERMSIG(status);
  }
  return end;
}

// create + probe, from a frame that lets no exception out (as a C caller would be).
void probe_noexcept(const mlh_device_plugin* t) noexcept {
  mlh_error error{};
  error.struct_size = sizeof(error);
  mlh_plugin_instance* inst = nullptr;
  if (t->create(&inst, &error) != MLH_OK) _exit(10);
  const mlh_device_record* records = nullptr;
  uint32_t count = 0;
  t->probe(inst, &records, &count, &error);
  _exit(11);  // probe returned: not what these cases promise
}

void expect_child_killed_by(const std::string& dir, const std::string& name, int signal) {
  Negotiated n = load_device(dir, name);
  ASSERT_NE(n.table, nullptr);
  ChildEnd end = run_in_child([&] { probe_noexcept(n.table); }, std::chrono::seconds(10));
  EXPECT_FALSE(end.timed_out);
  EXPECT_FALSE(end.exited) << "exit code " << end.exit_code;
  EXPECT_EQ(end.signal, signal) << strsignal(end.signal);
}

// --- manifests ------------------------------------------------------------------------------

TEST(TestPlugins, EveryCaseIsListedAndBuilt) {
  std::set<std::string> listed;
  std::stringstream ss(MLH_TEST_PLUGIN_CASES);
  for (std::string c; std::getline(ss, c, ';');) listed.insert(c);
  std::set<std::string> expected;
  for (const auto& c : kCases) expected.insert(c.dir);
  EXPECT_EQ(listed, expected) << "CMake's case list and this test's table differ";
  for (const auto& c : kCases) EXPECT_TRUE(fs::is_directory(case_dir(c.dir))) << c.dir;
}

TEST(TestPlugins, EachFolderHoldsOneManifestAndTheLibraryItNames) {
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.dir);
    std::vector<fs::path> manifests;
    for (const auto& e : fs::directory_iterator(case_dir(c.dir)))
      if (e.path().filename().string().size() > 12 &&
          e.path().filename().string().rfind(".plugin.json") == e.path().filename().string().size() - 12)
        manifests.push_back(e.path());
    ASSERT_EQ(manifests.size(), 1u);
    EXPECT_EQ(manifests[0].filename().string(), std::string(c.name) + ".plugin.json");
    json m = read_json(manifests[0]);
    EXPECT_EQ(m.at("manifest_version"), 1);
    EXPECT_EQ(m.at("kind"), "device");
    EXPECT_EQ(m.at("name"), c.name);
    EXPECT_EQ(m.at("version"), "0.1.0");
    EXPECT_EQ(m.at("abi").at("major"), c.abi_major);
    EXPECT_EQ(m.at("abi").at("minor"), MLH_ABI_VERSION_MINOR);
    EXPECT_EQ(m.at("library"), std::string("libmlhost-") + c.name + ".so");
    EXPECT_TRUE(fs::is_regular_file(case_dir(c.dir) / m.at("library").get<std::string>()));
    EXPECT_TRUE(m.at("build").is_object());
    EXPECT_TRUE(m.at("description").is_string());
  }
}

// --- cases that load and negotiate correctly --------------------------------------------------

TEST(TestPlugins, CgoodIsACorrectPureCPlugin) {
  Negotiated n = load_device("cgood", "cgood");
  ASSERT_NE(n.table, nullptr);
  EXPECT_STREQ(n.answer.response.name, "cgood");
  EXPECT_STREQ(n.answer.response.version, "0.1.0");
  EXPECT_EQ(n.table->prepare, nullptr);
  EXPECT_EQ(n.table->telemetry, nullptr);
  mlh_error e;
  EXPECT_EQ(probe(n.table, e,
                  [](const mlh_device_record* r, uint32_t count) {
                    ASSERT_EQ(count, 1u);
                    EXPECT_EQ(r[0].struct_size, sizeof(mlh_device_record));
                    EXPECT_STREQ(r[0].name, "c plugin cpu");
                    EXPECT_EQ(r[0].device_class, MLH_DEVICE_CLASS_CPU);
                    EXPECT_EQ(r[0].available, 1);
                    EXPECT_STREQ(r[0].torch_device, "cpu");
                  }),
            MLH_OK)
      << e.message;
}

TEST(TestPlugins, SlowGoodTakes300msThenReportsOneCpu) {
  Negotiated n = load_device("slow-good", "slowgood");
  ASSERT_NE(n.table, nullptr);
  EXPECT_STREQ(n.answer.response.name, "slowgood");
  mlh_error e;
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(probe(n.table, e,
                  [](const mlh_device_record* r, uint32_t count) {
                    ASSERT_EQ(count, 1u);
                    EXPECT_EQ(r[0].device_class, MLH_DEVICE_CLASS_CPU);
                    EXPECT_STREQ(r[0].kind, "slowgood");
                    EXPECT_EQ(r[0].available, 1);
                  }),
            MLH_OK)
      << e.message;
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(295));
}

TEST(TestPlugins, GoodGpuReportsAUsableAndABrokenFakeGpu) {
  Negotiated n = load_device("good-gpu", "fakegpu");
  ASSERT_NE(n.table, nullptr);
  EXPECT_STREQ(n.answer.response.name, "fakegpu");
  mlh_error e;
  EXPECT_EQ(probe(n.table, e,
                  [](const mlh_device_record* r, uint32_t count) {
                    ASSERT_EQ(count, 2u);
                    for (uint32_t i = 0; i < 2; ++i) {
                      EXPECT_EQ(r[i].index, static_cast<int32_t>(i));
                      EXPECT_EQ(r[i].device_class, MLH_DEVICE_CLASS_DISCRETE_GPU);
                      EXPECT_STREQ(r[i].kind, "fakegpu");
                      EXPECT_STREQ(r[i].torch_device, "cpu");
                      EXPECT_EQ(r[i].memory_total_bytes, int64_t{8} << 30);
                      EXPECT_EQ(r[i].compute_units, 40);
                    }
                    EXPECT_EQ(r[0].available, 1);
                    EXPECT_EQ(r[0].unavailable_reason, nullptr);
                    EXPECT_EQ(r[1].available, 0);
                    EXPECT_STREQ(r[1].unavailable_reason, "fake device 1 is broken on purpose");
                  }),
            MLH_OK)
      << e.message;
}

TEST(TestPlugins, DupCpuIsASecondPluginNamedCpu) {
  Negotiated n = load_device("dup-cpu", "cpu");
  ASSERT_NE(n.table, nullptr);
  EXPECT_STREQ(n.answer.response.name, "cpu");
  mlh_error e;
  EXPECT_EQ(probe(n.table, e,
                  [](const mlh_device_record* r, uint32_t count) {
                    ASSERT_EQ(count, 1u);
                    EXPECT_STREQ(r[0].kind, "cpu");
                    EXPECT_STREQ(r[0].name, "duplicate cpu");
                    EXPECT_EQ(r[0].device_class, MLH_DEVICE_CLASS_CPU);
                  }),
            MLH_OK)
      << e.message;
}

TEST(TestPlugins, ThrowHelperReturnsInternalError) {
  Negotiated n = load_device("throw-helper", "throw-helper");
  ASSERT_NE(n.table, nullptr);
  mlh_error e;
  EXPECT_EQ(probe(n.table, e, [](const mlh_device_record*, uint32_t) { ADD_FAILURE() << "probe succeeded"; }),
            MLH_ERR_INTERNAL);
  EXPECT_EQ(e.code, MLH_ERR_INTERNAL);
  EXPECT_NE(std::string(e.message).find("probe exploded"), std::string::npos) << e.message;
}

// --- malformed probe results (returned in-process: they do not crash the caller) -------------

TEST(TestPlugins, MalformedNullName) {
  Negotiated n = load_device("malformed-null-name", "malformed-null-name");
  ASSERT_NE(n.table, nullptr);
  mlh_error e;
  EXPECT_EQ(probe(n.table, e,
                  [](const mlh_device_record* r, uint32_t count) {
                    ASSERT_EQ(count, 1u);
                    EXPECT_EQ(r[0].struct_size, sizeof(mlh_device_record));
                    EXPECT_EQ(r[0].name, nullptr);
                    EXPECT_STREQ(r[0].kind, "malformed");
                  }),
            MLH_OK);
}

TEST(TestPlugins, MalformedSize) {
  Negotiated n = load_device("malformed-size", "malformed-size");
  ASSERT_NE(n.table, nullptr);
  mlh_error e;
  EXPECT_EQ(probe(n.table, e,
                  [](const mlh_device_record* r, uint32_t count) {
                    ASSERT_EQ(count, 1u);
                    EXPECT_EQ(r[0].struct_size, 8u);
                  }),
            MLH_OK);
}

TEST(TestPlugins, MalformedCount) {
  Negotiated n = load_device("malformed-count", "malformed-count");
  ASSERT_NE(n.table, nullptr);
  mlh_error e;
  EXPECT_EQ(probe(n.table, e,
                  [](const mlh_device_record* r, uint32_t count) {
                    EXPECT_EQ(count, 5u);
                    EXPECT_EQ(r, nullptr);
                  }),
            MLH_OK);
}

TEST(TestPlugins, MalformedClass) {
  Negotiated n = load_device("malformed-class", "malformed-class");
  ASSERT_NE(n.table, nullptr);
  mlh_error e;
  EXPECT_EQ(probe(n.table, e,
                  [](const mlh_device_record* r, uint32_t count) {
                    ASSERT_EQ(count, 2u);
                    EXPECT_EQ(r[0].device_class, 42);
                    EXPECT_STREQ(r[0].torch_device, "cpu");
                    EXPECT_EQ(r[1].device_class, MLH_DEVICE_CLASS_CPU);
                    EXPECT_STREQ(r[1].torch_device, "cuda:x!");
                  }),
            MLH_OK);
}

// --- negotiation faults -------------------------------------------------------------------

TEST(TestPlugins, WrongMajorAnswersMajor2) {
  Library lib(library_path("wrong-major", "wrong-major"));
  ASSERT_NE(lib.handle, nullptr) << lib.error;
  ASSERT_NE(lib.entry(), nullptr);
  Answer a = negotiate(lib.entry());
  EXPECT_EQ(a.status, MLH_OK);
  EXPECT_EQ(a.response.abi_major, 2u);
  EXPECT_STREQ(a.response.name, "wrong-major");
  EXPECT_NE(a.response.table, nullptr) << "a working table, so only the major gives it away";
  EXPECT_EQ(read_json(case_dir("wrong-major") / "wrong-major.plugin.json").at("abi").at("major"), 1);
}

TEST(TestPlugins, WrongMajorRefuseSaysItNeedsAbi2) {
  Library lib(library_path("wrong-major-refuse", "wrong-major-refuse"));
  ASSERT_NE(lib.handle, nullptr) << lib.error;
  ASSERT_NE(lib.entry(), nullptr);
  Answer a = negotiate(lib.entry());
  EXPECT_EQ(a.status, MLH_ERR_VERSION);
  EXPECT_EQ(a.error.code, MLH_ERR_VERSION);
  EXPECT_STREQ(a.error.message, "plugin needs ABI 2.x");
  EXPECT_EQ(read_json(case_dir("wrong-major-refuse") / "wrong-major-refuse.plugin.json").at("abi").at("major"),
            2);
}

TEST(TestPlugins, WrongKindAnswersAlgorithm) {
  Library lib(library_path("wrong-kind", "wrong-kind"));
  ASSERT_NE(lib.handle, nullptr) << lib.error;
  ASSERT_NE(lib.entry(), nullptr);
  Answer a = negotiate(lib.entry());
  EXPECT_EQ(a.status, MLH_OK);
  EXPECT_EQ(a.response.kind, MLH_PLUGIN_KIND_ALGORITHM);
  ASSERT_NE(a.response.table, nullptr);
  EXPECT_EQ(static_cast<const mlh_algorithm_plugin*>(a.response.table)->struct_size, sizeof(mlh_algorithm_plugin));
  EXPECT_EQ(read_json(case_dir("wrong-kind") / "wrong-kind.plugin.json").at("kind"), "device");
}

TEST(TestPlugins, NameMismatchAnswersLibraryName) {
  Library lib(library_path("name-mismatch", "manifest-name"));
  ASSERT_NE(lib.handle, nullptr) << lib.error;
  ASSERT_NE(lib.entry(), nullptr);
  Answer a = negotiate(lib.entry());
  EXPECT_EQ(a.status, MLH_OK);
  EXPECT_STREQ(a.response.name, "library-name");
  EXPECT_EQ(read_json(case_dir("name-mismatch") / "manifest-name.plugin.json").at("name"), "manifest-name");
}

// --- loading faults ------------------------------------------------------------------------

TEST(TestPlugins, NoEntryLoadsButHasNoEntrySymbol) {
  Library lib(library_path("no-entry", "no-entry"));
  ASSERT_NE(lib.handle, nullptr) << lib.error;
  EXPECT_EQ(lib.entry(), nullptr);
}

TEST(TestPlugins, NotElfFailsToLoad) {
  fs::path p = library_path("not-elf", "not-elf");
  ASSERT_TRUE(fs::is_regular_file(p));
  auto bytes = read_bytes(p);
  ASSERT_GE(bytes.size(), 4u);
  EXPECT_NE(std::memcmp(bytes.data(), "\x7f" "ELF", 4), 0);
  Library lib(p);
  EXPECT_EQ(lib.handle, nullptr);
  EXPECT_FALSE(lib.error.empty());
  std::cout << "dlopen(not-elf): " << lib.error << "\n";
}

TEST(TestPlugins, WrongArchIsARealPluginPatchedForTheOtherArch) {
  fs::path patched = library_path("wrong-arch", "wrong-arch");
  fs::path original = fs::path(MLH_TEST_PLUGIN_STAGING) / "wrong-arch" / "libmlhost-wrong-arch.so";
  auto a = read_bytes(original);
  auto b = read_bytes(patched);
  ASSERT_GE(a.size(), 20u);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(e_machine(b), unsigned{MLH_TEST_WRONG_ARCH_MACHINE});
  EXPECT_NE(e_machine(a), e_machine(b));
  for (size_t i = 0; i < a.size(); ++i)
    if (i != 18 && i != 19) {
      ASSERT_EQ(a[i], b[i]) << "only e_machine differs; byte " << i;
    }

  Library wrong(patched);
  EXPECT_EQ(wrong.handle, nullptr);
  EXPECT_FALSE(wrong.error.empty());
  std::cout << "dlopen(wrong-arch): " << wrong.error << "\n";

  {  // The original is a working plugin: e_machine is the only fault.
    Negotiated n = load_device_at(original);
    EXPECT_NE(n.table, nullptr);
  }

  json m = read_json(case_dir("wrong-arch") / "wrong-arch.plugin.json");
  json m0 = read_json(original.parent_path() / "wrong-arch.plugin.json");
  EXPECT_EQ(m.at("build").at("arch"), MLH_TEST_WRONG_ARCH_NAME);
  EXPECT_NE(m.at("build").at("arch"), m0.at("build").at("arch"));
}

// --- cases that end the caller: load, negotiate, then probe only in a child ------------------

TEST(TestPlugins, CrashDiesOfSigsegv) { expect_child_killed_by("crash", "crash", SIGSEGV); }

TEST(TestPlugins, AbortDiesOfSigabrt) { expect_child_killed_by("abort", "abort", SIGABRT); }

TEST(TestPlugins, HangNeverReturns) {
  Negotiated n = load_device("hang", "hang");
  ASSERT_NE(n.table, nullptr);
  ChildEnd end = run_in_child([&] { probe_noexcept(n.table); }, std::chrono::milliseconds(1500));
  EXPECT_TRUE(end.timed_out) << "exited " << end.exited << " code " << end.exit_code << " signal " << end.signal;
}

// An exception crossing the C boundary into a frame that cannot pass it on terminates.
TEST(TestPlugins, ThrowRawTerminatesACallerThatCannotCatch) {
  expect_child_killed_by("throw-raw", "throw-raw", SIGABRT);
}

// ... but it does unwind into C++ callers: a host that wraps plugin calls in catch (...) sees
// it as an exception (then reports it), not as a signal.
TEST(TestPlugins, ThrowRawExceptionReachesACxxCaller) {
  Negotiated n = load_device("throw-raw", "throw-raw");
  ASSERT_NE(n.table, nullptr);
  const mlh_device_plugin* t = n.table;
  ChildEnd end = run_in_child(
      [t] {
        try {
          mlh_error error{};
          error.struct_size = sizeof(error);
          mlh_plugin_instance* inst = nullptr;
          t->create(&inst, &error);
          const mlh_device_record* records = nullptr;
          uint32_t count = 0;
          t->probe(inst, &records, &count, &error);
          _exit(11);
        } catch (const std::exception& e) {
          _exit(std::strcmp(e.what(), "probe exploded") == 0 ? 3 : 4);
        } catch (...) {
          _exit(5);
        }
      },
      std::chrono::seconds(10));
  EXPECT_TRUE(end.exited);
  EXPECT_EQ(end.exit_code, 3);
}

}  // namespace
