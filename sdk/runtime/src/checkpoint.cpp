#include "mlh/runtime/checkpoint.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <signal.h>
#include <unistd.h>

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize/archive.h>

#include "mlh/runtime/compat.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <memory>

#include "mlh/plugin.hpp"
#include "mlh/crc32c.hpp"
#include "mlh/runtime/distributed.hpp"

namespace fs = std::filesystem;

namespace mlh::rt {
namespace {

constexpr int64_t kFormat = 1;
constexpr char kMagic[8] = {'M', 'L', 'H', 'C', 'K', 'P', 'T', '1'};
constexpr size_t kHeaderSize = 40;
constexpr size_t kCrcOffset = 36;
constexpr const char* kBestName = "best.ckpt";

// A file that cannot be used as a checkpoint (as opposed to one that does not fit the state):
// the loaders skip it with a warning and try the next.
struct Unusable : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string errno_text() { return std::strerror(errno); }

// The first line of a LibTorch error; the rest is a C++ backtrace.
std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

void check_name(const std::string& name, const char* what) {
  bool ok = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
  for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!ok)
    throw Error(MLH_ERR_INVALID_ARGUMENT, std::string("checkpoint: ") + what + " name '" + name +
                                              "' must be letters, digits and '_', not starting with a digit");
}

template <typename T>
void put_le(unsigned char* p, T value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  for (size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<unsigned char>(bits >> (8 * i));
}

template <typename T>
T get_le(const unsigned char* p) {
  uint64_t bits = 0;
  for (size_t i = 0; i < sizeof(T); ++i) bits |= uint64_t(p[i]) << (8 * i);
  T value;
  std::memcpy(&value, &bits, sizeof(T));
  return value;
}

struct Header {
  uint64_t payload_size = 0;
  int64_t step = 0;
  std::optional<double> metric;
};

void encode_header(unsigned char* h, const Header& header) {
  std::memcpy(h, kMagic, sizeof kMagic);
  put_le<uint64_t>(h + 8, header.payload_size);
  put_le<int64_t>(h + 16, header.step);
  put_le<double>(h + 24, header.metric.value_or(std::numeric_limits<double>::quiet_NaN()));
  put_le<uint32_t>(h + 32, 0);
}

Header decode_header(const unsigned char* h) {
  if (std::memcmp(h, kMagic, sizeof kMagic) != 0) throw Unusable("not a checkpoint (no MLHCKPT1 header)");
  Header header;
  header.payload_size = get_le<uint64_t>(h + 8);
  header.step = get_le<int64_t>(h + 16);
  const double metric = get_le<double>(h + 24);
  if (!std::isnan(metric)) header.metric = metric;
  return header;
}

// Only the header, to compare metrics without reading whole checkpoints.
std::optional<Header> peek_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  unsigned char h[kHeaderSize];
  if (!in.read(reinterpret_cast<char*>(h), kHeaderSize)) return std::nullopt;
  try {
    return decode_header(h);
  } catch (const Unusable&) {
    return std::nullopt;
  }
}

// ---- the archive ----

void write_archive(const TrainingState& state, torch::serialize::OutputArchive& archive) {
  archive.write("format", c10::IValue(kFormat));
  archive.write("values", c10::IValue(state.values.dump()));
  // A dict rather than archive keys, so that any name (e.g. "cuda:0") is allowed.
  c10::Dict<std::string, at::Tensor> tensors;
  for (const auto& [name, tensor] : state.tensors) tensors.insert(name, tensor.detach());
  archive.write("tensors", c10::IValue(tensors));

  torch::serialize::OutputArchive modules;
  for (const auto& [name, module] : state.modules) {
    check_name(name, "module");
    torch::serialize::OutputArchive sub;
    module->save(sub);
    modules.write(name, sub);
  }
  archive.write("modules", modules);
  torch::serialize::OutputArchive optimizers;
  for (const auto& [name, optimizer] : state.optimizers) {
    check_name(name, "optimizer");
    torch::serialize::OutputArchive sub;
    optimizer->save(sub);
    optimizers.write(name, sub);
  }
  archive.write("optimizers", optimizers);
}

[[noreturn]] void mismatch(const std::string& what) { throw Error(MLH_ERR_INVALID_ARGUMENT, what); }

// nn::Module::load assigns whatever it reads (set_ changes shapes silently), so the tensors
// are checked first, walking the archive as Module::load does.
void check_module(torch::nn::Module& module, torch::serialize::InputArchive& archive, const std::string& prefix) {
  auto check = [&](const std::string& key, const at::Tensor& expected, bool is_buffer) {
    at::Tensor found;
    const std::string kind = is_buffer ? "buffer" : "parameter";
    if (!archive.try_read(key, found, is_buffer)) mismatch(kind + " '" + prefix + key + "' is missing");
    if (found.sizes() != expected.sizes() || found.scalar_type() != expected.scalar_type())
      mismatch(kind + " '" + prefix + key + "' is " + std::string(c10::toString(found.scalar_type())) +
               c10::str(found.sizes()) + " in the checkpoint, " + c10::toString(expected.scalar_type()) +
               c10::str(expected.sizes()) + " in the model");
  };
  for (const auto& p : module.named_parameters(/*recurse=*/false)) check(p.key(), p.value(), false);
  for (const auto& b : module.named_buffers(/*recurse=*/false)) check(b.key(), b.value(), true);
  for (const auto& child : module.named_children()) {
    if (!child.value()->is_serializable()) continue;
    torch::serialize::InputArchive sub;
    if (!archive.try_read(child.key(), sub)) mismatch("submodule '" + prefix + child.key() + "' is missing");
    check_module(*child.value(), sub, prefix + child.key() + ".");
  }
}

// Reads everything without side effects first, so that a checkpoint that does not fit leaves
// the state untouched as far as it can be checked (an optimizer's fit is only known to
// Optimizer::load itself).
void read_archive(torch::serialize::InputArchive& archive, TrainingState& state) {
  c10::IValue format, values, tensors;
  if (!archive.try_read("format", format) || !format.isInt() || format.toInt() != kFormat)
    mismatch("not a training state archive of format " + std::to_string(kFormat));
  if (!archive.try_read("values", values) || !values.isString()) mismatch("'values' is missing");
  if (!archive.try_read("tensors", tensors) || !tensors.isGenericDict()) mismatch("'tensors' is missing");
  nlohmann::json json = nlohmann::json::parse(values.toStringRef(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) mismatch("'values' is not valid JSON");

  torch::serialize::InputArchive modules, optimizers;
  if (!archive.try_read("modules", modules) || !archive.try_read("optimizers", optimizers))
    mismatch("'modules' or 'optimizers' is missing");
  // Held by pointer: InputArchive's copy constructor takes a non-const reference, which
  // clang rejects in a std::map value (the fuzz build compiles this file with clang).
  using Archives = std::map<std::string, std::unique_ptr<torch::serialize::InputArchive>>;
  Archives module_archives;
  for (const auto& [name, module] : state.modules) {
    check_name(name, "module");
    auto& sub = module_archives[name] = std::make_unique<torch::serialize::InputArchive>();
    if (!modules.try_read(name, *sub)) mismatch("module '" + name + "' is missing");
    check_module(*module, *sub, name + ".");
  }
  Archives optimizer_archives;
  for (const auto& [name, optimizer] : state.optimizers) {
    check_name(name, "optimizer");
    auto& sub = optimizer_archives[name] = std::make_unique<torch::serialize::InputArchive>();
    if (!optimizers.try_read(name, *sub)) mismatch("optimizer '" + name + "' is missing");
  }

  for (auto& [name, module] : state.modules) module->load(*module_archives[name]);
  for (auto& [name, optimizer] : state.optimizers) {
    try {
      compat::load_optimizer(*optimizer, *optimizer_archives[name]);
    } catch (const c10::Error& e) {
      mismatch("optimizer '" + name + "' does not fit: " + first_line(e.what()));
    }
  }
  state.tensors.clear();
  for (const auto& entry : tensors.toGenericDict()) state.tensors[entry.key().toStringRef()] = entry.value().toTensor();
  state.values = std::move(json);
}

// ---- files ----

std::vector<char> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw Unusable("cannot open: " + errno_text());
  const std::streamoff size = in.tellg();
  if (size < 0) throw Unusable("cannot read its size");
  std::vector<char> bytes(static_cast<size_t>(size));
  in.seekg(0);
  if (!in.read(bytes.data(), static_cast<std::streamsize>(bytes.size())))
    throw Unusable("cannot read: " + errno_text());
  return bytes;
}

// Opens one checkpoint file's archive: Unusable when it does not verify.
torch::serialize::InputArchive open_verified(const std::string& path, at::Device device, Header& header) {
  const std::vector<char> bytes = read_all(path);
  if (bytes.size() < kHeaderSize)
    throw Unusable("truncated: " + std::to_string(bytes.size()) + " bytes, shorter than the header");
  const auto* h = reinterpret_cast<const unsigned char*>(bytes.data());
  header = decode_header(h);
  const uint64_t payload = bytes.size() - kHeaderSize;
  if (header.payload_size != payload)
    throw Unusable((payload < header.payload_size ? "truncated: " : "trailing bytes: ") +
                   std::to_string(payload) + " payload bytes, the header says " + std::to_string(header.payload_size));
  const uint32_t stored = get_le<uint32_t>(h + kCrcOffset);
  const uint32_t computed = mlh::crc32c(bytes.data(), kCrcOffset, mlh::crc32c(bytes.data() + kHeaderSize, payload));
  if (stored != computed) throw Unusable("checksum mismatch (the file is corrupt)");

  torch::serialize::InputArchive archive;
  try {
    archive.load_from(bytes.data() + kHeaderSize, payload, device);
  } catch (const c10::Error& e) {
    throw Unusable("unreadable archive: " + first_line(e.what()));
  }
  return archive;
}

// Loads one checkpoint file: Unusable when it does not verify, mlh::Error when it verifies
// but does not fit the state.
LoadedCheckpoint load_file(const std::string& path, TrainingState& state, at::Device device) {
  Header header;
  torch::serialize::InputArchive archive = open_verified(path, device, header);
  try {
    read_archive(archive, state);
  } catch (const Error& e) {
    throw Error(e.code(), "checkpoint '" + path + "' does not fit this run: " + e.what());
  }
  return {header.step, header.metric, state.values, path};
}

// A module's sub-archive flattened to dotted names, as Module::save nested it: its tensors
// under their keys, each child under its own sub-archive.
void flatten_module_archive(torch::serialize::InputArchive& archive, const std::string& prefix,
                            std::map<std::string, at::Tensor>& out) {
  for (const std::string& key : archive.keys()) {
    at::Tensor tensor;
    torch::serialize::InputArchive child;
    if (archive.try_read(key, tensor))
      out[prefix + key] = tensor;
    else if (archive.try_read(key, child))
      flatten_module_archive(child, prefix + key + ".", out);
  }
}

std::string step_file_name(int64_t step) {
  char name[40];
  std::snprintf(name, sizeof name, "step-%09lld.ckpt", static_cast<long long>(step));
  return name;
}

bool parse_step_file(const std::string& name, int64_t& step) {
  constexpr size_t prefix = 5, suffix = 5;  // "step-", ".ckpt"
  if (name.size() <= prefix + suffix || name.compare(0, prefix, "step-") != 0 ||
      name.compare(name.size() - suffix, suffix, ".ckpt") != 0)
    return false;
  const std::string digits = name.substr(prefix, name.size() - prefix - suffix);
  if (digits.size() > 18 || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  step = std::stoll(digits);
  return true;
}

}  // namespace

// ---- TrainingState ----

TrainingState& TrainingState::add(const std::string& name, torch::nn::Module& module) {
  check_name(name, "module");
  modules[name] = &module;
  return *this;
}

TrainingState& TrainingState::add(const std::string& name, torch::optim::Optimizer& optimizer) {
  check_name(name, "optimizer");
  optimizers[name] = &optimizer;
  return *this;
}

void save_training_state(const TrainingState& state, std::ostream& out) {
  torch::serialize::OutputArchive archive;
  write_archive(state, archive);
  archive.save_to(out);
}

void load_training_state(TrainingState& state, std::istream& in, at::Device device) {
  torch::serialize::InputArchive archive;
  try {
    archive.load_from(in, device);
  } catch (const c10::Error& e) {
    throw Error(MLH_ERR_INVALID_ARGUMENT, "training state: unreadable archive: " + first_line(e.what()));
  }
  read_archive(archive, state);
}

// ---- CheckpointManager ----

CheckpointManager::CheckpointManager(const std::string& run_dir, int keep_last, Goal goal, WarningFn warn)
    : dir_((fs::path(run_dir) / "checkpoints").string()), keep_last_(keep_last), goal_(goal), warn_(std::move(warn)) {
  if (keep_last < 1)
    throw Error(MLH_ERR_INVALID_ARGUMENT,
                "checkpoints: keep_last must be at least 1, got " + std::to_string(keep_last));
}

std::string CheckpointManager::best_path() const { return (fs::path(dir_) / kBestName).string(); }

void CheckpointManager::warn(const std::string& message) const {
  if (warn_)
    warn_(message);
  else
    std::cerr << "warning: " << message << '\n';
}

std::vector<std::string> CheckpointManager::step_files() const {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    int64_t step = 0;
    if (entry.is_regular_file(ec) && parse_step_file(entry.path().filename().string(), step))
      found.emplace_back(step, entry.path().string());
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> paths;
  for (auto& f : found) paths.push_back(std::move(f.second));
  return paths;
}

std::string CheckpointManager::save(const TrainingState& state, int64_t step, std::optional<double> metric) {
  if (!dist_) return write(state, step, metric);
  // Distributed: rank 0 writes; every rank waits until it has, so a load that follows (the
  // best weights at the end, a resume) sees the file on every rank.
  std::string path;
  if (dist_->is_main()) path = write(state, step, metric);
  dist_->barrier();
  if (!dist_->is_main()) path = (fs::path(dir_) / step_file_name(step)).string();
  return path;
}

namespace {

// What a user needs beside "cannot write": the disk's free space, and that nothing is lost.
std::string disk_note(const std::string& dir) {
  std::error_code ec;
  const fs::space_info space = fs::space(dir, ec);
  const auto mib = [](uintmax_t bytes) { return std::to_string(bytes >> 20) + " MiB"; };
  return " (the disk holding '" + dir + "': " + (ec ? "its free space unknown: " + ec.message()
                                                    : mib(space.available) + " free of " + mib(space.capacity)) +
         "; the checkpoints before this one are kept: make room, then --resume the run)";
}

}  // namespace

std::string CheckpointManager::write(const TrainingState& state, int64_t step, std::optional<double> metric) {
  try {
    return write_file(state, step, metric);
  } catch (const Error& e) {
    if (e.code() != MLH_ERR_IO) throw;
    throw Error(MLH_ERR_IO, e.what() + disk_note(dir_));
  }
}

std::string CheckpointManager::write_file(const TrainingState& state, int64_t step, std::optional<double> metric) {
  if (step < 0)
    throw Error(MLH_ERR_INVALID_ARGUMENT, "checkpoint: step must not be negative, got " + std::to_string(step));
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) throw Error(MLH_ERR_IO, "cannot create checkpoint folder '" + dir_ + "': " + ec.message());
  remove_abandoned_temp_files();

  const std::string path = (fs::path(dir_) / step_file_name(step)).string();

  // Streamed: a placeholder header, the archive (checksummed as it goes), then the header.
  unsigned char header[kHeaderSize] = {};
  AtomicFile file(path);
  file.write(header, kHeaderSize);
  uint64_t size = 0;
  uint32_t payload_crc = 0;  // the header's bytes come last in the CRC: they are known last
  torch::serialize::OutputArchive archive;
  write_archive(state, archive);
  // The writer must look successful to LibTorch: its zip writer treats a short write or an
  // exception as fatal and rewrites its end record from a destructor (std::terminate). So the
  // first failure is kept, the rest of the archive discarded, and the failure thrown after.
  std::optional<Error> write_error;
  try {
    archive.save_to([&](const void* data, size_t n) -> size_t {
      if (write_error) return n;
      try {
        file.write(data, n);
      } catch (const Error& e) {
        write_error = e;
        return n;
      }
      payload_crc = mlh::crc32c(data, n, payload_crc);
      size += n;
      return n;
    });
  } catch (const c10::Error& e) {
    if (!write_error) write_error = Error(MLH_ERR_IO, "cannot write '" + path + "': " + first_line(e.what()));
  }
  if (write_error) throw *write_error;
  encode_header(header, {size, step, metric});
  put_le<uint32_t>(header + kCrcOffset, mlh::crc32c(header, kCrcOffset, payload_crc));
  file.write_at(0, header, kHeaderSize);
  file.commit();

  if (metric && !std::isnan(*metric)) update_best(path, *metric);
  prune();
  return path;
}

void CheckpointManager::update_best(const std::string& path, double metric) {
  const std::string best = best_path();
  if (const auto current = peek_header(best); current && current->metric) {
    const bool better = goal_ == Goal::Minimize ? metric < *current->metric : metric > *current->metric;
    if (!better) return;
  }
  // A hard link costs no space and survives the pruning of the step file; a file system
  // without links gets a copy. Either way best.ckpt is replaced by a rename, never missing.
  const std::string temp = best + AtomicFile::kTempMarker + std::to_string(::getpid());
  ::unlink(temp.c_str());
  if (::link(path.c_str(), temp.c_str()) == 0) {
    if (::rename(temp.c_str(), best.c_str()) != 0) {
      const std::string err = errno_text();
      ::unlink(temp.c_str());
      throw Error(MLH_ERR_IO, "cannot write '" + best + "': rename failed: " + err);
    }
    fsync_dir(dir_);
    return;
  }
  std::ifstream in(path, std::ios::binary);
  AtomicFile copy(best);
  char buffer[1 << 16];
  while (in.read(buffer, sizeof buffer) || in.gcount() > 0) copy.write(buffer, static_cast<size_t>(in.gcount()));
  if (in.bad()) throw Error(MLH_ERR_IO, "cannot read '" + path + "' to copy it to '" + best + "'");
  copy.commit();
}

void CheckpointManager::prune() {
  const std::vector<std::string> files = step_files();
  for (size_t i = static_cast<size_t>(keep_last_); i < files.size(); ++i) {
    std::error_code ec;
    // The checkpoint was saved; a file that cannot be removed only costs space.
    if (!fs::remove(files[i], ec) && ec) warn("cannot remove old checkpoint '" + files[i] + "': " + ec.message());
  }
}

// A process killed while writing leaves "<name>.tmp-<pid>" (see mlh/atomic_file.hpp), never
// read as a checkpoint; remove those whose writer no longer exists, so they do not pile up,
// and leave a live writer's alone.
void CheckpointManager::remove_abandoned_temp_files() {
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const size_t marker = name.rfind(mlh::AtomicFile::kTempMarker);
    if (marker == std::string::npos) continue;
    const std::string pid_text = name.substr(marker + std::strlen(mlh::AtomicFile::kTempMarker));
    if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
    const long pid = std::strtol(pid_text.c_str(), nullptr, 10);
    if (pid == static_cast<long>(::getpid()) || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::error_code remove_ec;
    fs::remove(it->path(), remove_ec);
  }
}

std::map<std::string, at::Tensor> read_checkpoint_module(const std::string& path, const std::string& module) {
  check_name(module, "module");
  Header header;
  torch::serialize::InputArchive archive, modules, sub;
  try {
    archive = open_verified(path, at::Device(at::kCPU), header);
  } catch (const Unusable& e) {
    throw Error(MLH_ERR_INVALID_ARGUMENT, "checkpoint '" + path + "' is unusable: " + e.what());
  }
  if (!archive.try_read("modules", modules) || !modules.try_read(module, sub))
    throw Error(MLH_ERR_INVALID_ARGUMENT, "checkpoint '" + path + "' holds no module '" + module + "'");
  std::map<std::string, at::Tensor> tensors;
  flatten_module_archive(sub, "", tensors);
  return tensors;
}

std::optional<LoadedCheckpoint> CheckpointManager::load_first(const std::vector<std::string>& paths,
                                                              TrainingState& state, at::Device device,
                                                              std::vector<std::string>* skipped) {
  unusable_.clear();
  for (const std::string& path : paths) {
    try {
      return load_file(path, state, device);
    } catch (const Unusable& e) {
      warn("skipping checkpoint '" + path + "': " + e.what());
      if (skipped) skipped->push_back(path + ": " + e.what());
      if (path != best_path()) unusable_.push_back(path);
    }
  }
  return std::nullopt;
}

std::vector<std::string> CheckpointManager::set_aside_unusable() {
  std::vector<std::string> said;
  for (const std::string& path : unusable_) {
    const std::string aside = path + ".damaged";
    std::error_code ec;
    fs::rename(path, aside, ec);
    said.push_back(ec ? "cannot move the damaged checkpoint '" + path + "' aside: " + ec.message()
                      : "moved the damaged checkpoint '" + path + "' aside to '" + aside +
                            "', so that no later command tries it again");
  }
  unusable_.clear();
  return said;
}

std::optional<LoadedCheckpoint> CheckpointManager::load_latest(TrainingState& state, at::Device device,
                                                               std::vector<std::string>* skipped) {
  return load_first(step_files(), state, device, skipped);
}

std::optional<LoadedCheckpoint> CheckpointManager::load_best(TrainingState& state, at::Device device) {
  std::vector<std::pair<double, std::string>> ranked;
  for (const std::string& path : step_files())
    if (const auto header = peek_header(path); header && header->metric) ranked.emplace_back(*header->metric, path);
  std::stable_sort(ranked.begin(), ranked.end(), [&](const auto& a, const auto& b) {
    return goal_ == Goal::Minimize ? a.first < b.first : a.first > b.first;
  });
  std::vector<std::string> paths;
  if (fs::exists(best_path())) paths.push_back(best_path());
  for (auto& r : ranked) paths.push_back(std::move(r.second));
  return load_first(paths, state, device);
}

}  // namespace mlh::rt
