#include "torch_save_reader.hpp"

#include <caffe2/serialize/inline_container.h>

#include <ATen/ATen.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "mlh/plugin.hpp"

namespace mlh::rt {
namespace {

// A Python value as far as weights files need one.
struct Value;
using Ptr = std::shared_ptr<Value>;
struct Value {
  enum class Kind { kNone, kBool, kInt, kFloat, kString, kTuple, kList, kDict, kTensor, kStorage, kGlobal, kObject };
  Kind kind = Kind::kNone;
  int64_t integer = 0;
  double number = 0;
  std::string text;                          // a string; a global's or an object's "module.name"
  std::vector<Ptr> items;                    // tuple, list (and set)
  std::vector<std::pair<Ptr, Ptr>> entries;  // dict, in insertion order
  at::Tensor tensor;                         // tensor; storage: its elements, 1-D
  Ptr state;                                 // object: what BUILD gave it (a module's __dict__)
};

Ptr make(Value::Kind kind) {
  auto v = std::make_shared<Value>();
  v->kind = kind;
  return v;
}
Ptr make_int(int64_t i) {
  Ptr v = make(Value::Kind::kInt);
  v->integer = i;
  return v;
}
Ptr make_text(Value::Kind kind, std::string text) {
  Ptr v = make(kind);
  v->text = std::move(text);
  return v;
}

// The dtype of torch.<Name>Storage, as torch.save names a storage's type.
std::optional<at::ScalarType> storage_dtype(const std::string& global) {
  static const std::map<std::string, at::ScalarType> types = {
      {"torch.FloatStorage", at::kFloat},   {"torch.DoubleStorage", at::kDouble}, {"torch.HalfStorage", at::kHalf},
      {"torch.BFloat16Storage", at::kBFloat16}, {"torch.LongStorage", at::kLong}, {"torch.IntStorage", at::kInt},
      {"torch.ShortStorage", at::kShort},   {"torch.CharStorage", at::kChar},     {"torch.ByteStorage", at::kByte},
      {"torch.BoolStorage", at::kBool}};
  const auto it = types.find(global);
  if (it == types.end()) return std::nullopt;
  return it->second;
}

class Unpickler {
 public:
  Unpickler(std::string path, caffe2::serialize::PyTorchStreamReader& archive, const char* data, size_t size)
      : path_(std::move(path)), archive_(archive), data_(data), size_(size) {}

  Ptr run() {
    while (true) {
      const uint8_t op = u8();
      if (op == '.') break;  // STOP
      step(op);
    }
    if (stack_.size() != 1) fail("the pickle ends with " + std::to_string(stack_.size()) + " values, not 1");
    return stack_.back();
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(MLH_ERR_INVALID_ARGUMENT, "--init-from '" + path_ + "': cannot read its torch.save pickle: " + what);
  }

  const char* take(size_t n) {
    if (n > size_ - pos_) fail("it ends early (at byte " + std::to_string(pos_) + ")");
    const char* p = data_ + pos_;
    pos_ += n;
    return p;
  }
  template <typename T>
  T little() {
    T value;
    std::memcpy(&value, take(sizeof(T)), sizeof(T));  // pickles are little-endian, as this machine
    return value;
  }
  uint8_t u8() { return little<uint8_t>(); }
  std::string bytes(size_t n) { return std::string(take(n), n); }
  std::string line() {
    std::string out;
    for (char c = *take(1); c != '\n'; c = *take(1)) out += c;
    return out;
  }

  void push(Ptr v) { stack_.push_back(std::move(v)); }
  Ptr pop() {
    if (stack_.empty()) fail("the stack is empty");
    Ptr v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  Ptr& top() {
    if (stack_.empty()) fail("the stack is empty");
    return stack_.back();
  }
  std::vector<Ptr> pop_to_mark() {
    if (marks_.empty()) fail("no MARK");
    const size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<Ptr> items(stack_.begin() + static_cast<std::ptrdiff_t>(mark), stack_.end());
    stack_.resize(mark);
    return items;
  }
  Ptr tuple(std::vector<Ptr> items) {
    Ptr t = make(Value::Kind::kTuple);
    t->items = std::move(items);
    return t;
  }
  void memo_put(size_t index) { memo_[index] = top(); }
  Ptr memo_get(size_t index) {
    const auto it = memo_.find(index);
    if (it == memo_.end()) fail("memo entry " + std::to_string(index) + " is missing");
    return it->second;
  }
  Ptr& dict_on_top_below(size_t n) {
    if (stack_.size() < n + 1 || stack_[stack_.size() - n - 1]->kind != Value::Kind::kDict)
      fail("SETITEM without a dict");
    return stack_[stack_.size() - n - 1];
  }

  void step(uint8_t op) {
    using K = Value::Kind;
    switch (op) {
      case 0x80: u8(); break;                                 // PROTO
      case 0x95: little<uint64_t>(); break;                   // FRAME
      case '(': marks_.push_back(stack_.size()); break;       // MARK
      case '0': pop(); break;                                 // POP
      case '1': pop_to_mark(); break;                         // POP_MARK
      case '2': push(top()); break;                           // DUP
      case 'N': push(make(K::kNone)); break;
      case 0x88: case 0x89: {                                 // NEWTRUE, NEWFALSE
        Ptr b = make(K::kBool);
        b->integer = op == 0x88;
        push(b);
      } break;
      case 'J': push(make_int(little<int32_t>())); break;     // BININT
      case 'K': push(make_int(u8())); break;                  // BININT1
      case 'M': push(make_int(little<uint16_t>())); break;    // BININT2
      case 0x8a: case 0x8b: {                                 // LONG1, LONG4
        const size_t n = op == 0x8a ? u8() : little<uint32_t>();
        if (n > 8) fail("an integer of " + std::to_string(n) + " bytes");
        const std::string b = bytes(n);
        uint64_t u = 0;
        for (size_t i = 0; i < n; ++i) u |= static_cast<uint64_t>(static_cast<uint8_t>(b[i])) << (8 * i);
        if (n > 0 && n < 8 && (static_cast<uint8_t>(b[n - 1]) & 0x80)) u |= ~uint64_t{0} << (8 * n);  // sign
        push(make_int(static_cast<int64_t>(u)));
      } break;
      case 'G': {                                             // BINFLOAT, big-endian
        const std::string b = bytes(8);
        uint64_t u = 0;
        for (char c : b) u = (u << 8) | static_cast<uint8_t>(c);
        Ptr f = make(K::kFloat);
        std::memcpy(&f->number, &u, 8);
        push(f);
      } break;
      case 'X': push(make_text(K::kString, bytes(little<uint32_t>()))); break;   // BINUNICODE
      case 0x8c: push(make_text(K::kString, bytes(u8()))); break;                // SHORT_BINUNICODE
      case 0x8d: push(make_text(K::kString, bytes(little<uint64_t>()))); break;  // BINUNICODE8
      case 'T': case 'B': push(make_text(K::kString, bytes(little<uint32_t>()))); break;  // BINSTRING, BINBYTES
      case 'U': case 'C': push(make_text(K::kString, bytes(u8()))); break;  // SHORT_BINSTRING, SHORT_BINBYTES
      case ')': push(tuple({})); break;                                     // EMPTY_TUPLE
      case 't': push(tuple(pop_to_mark())); break;                          // TUPLE
      case 0x85: case 0x86: case 0x87: {                                    // TUPLE1, 2, 3
        std::vector<Ptr> items(op - 0x84);
        for (size_t i = items.size(); i-- > 0;) items[i] = pop();
        push(tuple(std::move(items)));
      } break;
      case ']': case 0x8f: push(make(K::kList)); break;                     // EMPTY_LIST, EMPTY_SET
      case 'l': {                                                           // LIST
        Ptr l = make(K::kList);
        l->items = pop_to_mark();
        push(l);
      } break;
      case 'a': {                                                           // APPEND
        Ptr item = pop();
        if (top()->kind != K::kList) fail("APPEND without a list");
        top()->items.push_back(item);
      } break;
      case 'e': case 0x90: {                                                // APPENDS, ADDITEMS
        std::vector<Ptr> items = pop_to_mark();
        if (top()->kind != K::kList) fail("APPENDS without a list");
        for (Ptr& item : items) top()->items.push_back(std::move(item));
      } break;
      case '}': push(make(K::kDict)); break;                                // EMPTY_DICT
      case 'd': {                                                           // DICT
        std::vector<Ptr> items = pop_to_mark();
        Ptr d = make(K::kDict);
        for (size_t i = 0; i + 1 < items.size(); i += 2) d->entries.emplace_back(items[i], items[i + 1]);
        push(d);
      } break;
      case 's': {                                                           // SETITEM
        Ptr value = pop(), key = pop();
        dict_on_top_below(0)->entries.emplace_back(key, value);
      } break;
      case 'u': {                                                           // SETITEMS
        std::vector<Ptr> items = pop_to_mark();
        Ptr& d = dict_on_top_below(0);
        for (size_t i = 0; i + 1 < items.size(); i += 2) d->entries.emplace_back(items[i], items[i + 1]);
      } break;
      case 'q': memo_put(u8()); break;                                      // BINPUT
      case 'r': memo_put(little<uint32_t>()); break;                        // LONG_BINPUT
      case 0x94: memo_put(memo_.size()); break;                             // MEMOIZE
      case 'h': push(memo_get(u8())); break;                                // BINGET
      case 'j': push(memo_get(little<uint32_t>())); break;                  // LONG_BINGET
      case 'c': {                                                           // GLOBAL
        const std::string module = line();
        push(make_text(K::kGlobal, module + "." + line()));
      } break;
      case 0x93: {                                                          // STACK_GLOBAL
        Ptr name = pop(), module = pop();
        push(make_text(K::kGlobal, module->text + "." + name->text));
      } break;
      case 'R': {                                                           // REDUCE
        Ptr args = pop(), callable = pop();
        push(call(callable, args));
      } break;
      case 0x81: {                                                          // NEWOBJ: cls.__new__(cls, *args)
        pop();
        Ptr cls = pop();
        push(make_text(K::kObject, cls->text));
      } break;
      case 'b': {                                                           // BUILD
        Ptr state = pop();
        if (top()->kind == K::kObject) top()->state = state;  // a dict's state is its attributes (_metadata)
      } break;
      case 'Q': {                                                           // BINPERSID
        Ptr pid = pop();
        push(storage(pid));
      } break;
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", op);
        fail(std::string("opcode ") + hex + " at byte " + std::to_string(pos_ - 1) +
             " (not one torch.save writes for weights)");
      }
    }
  }

  static std::vector<int64_t> ints(const Ptr& tuple) {
    std::vector<int64_t> out;
    for (const Ptr& item : tuple->items) out.push_back(item->integer);
    return out;
  }

  Ptr call(const Ptr& callable, const Ptr& args) {
    using K = Value::Kind;
    if (callable->kind != K::kGlobal) fail("a call of something that is not a class or function");
    const std::string& name = callable->text;
    const std::vector<Ptr>& a = args->items;
    if (name == "collections.OrderedDict" || name == "builtins.dict") {
      Ptr d = make(K::kDict);
      if (!a.empty() && a[0]->kind == K::kList)
        for (const Ptr& pair : a[0]->items)
          if (pair->items.size() == 2) d->entries.emplace_back(pair->items[0], pair->items[1]);
      return d;
    }
    if (name == "builtins.set" || name == "__builtin__.set" || name == "builtins.frozenset") {
      Ptr s = make(K::kList);
      if (!a.empty()) s->items = a[0]->items;
      return s;
    }
    if (name == "torch._utils._rebuild_tensor_v2" || name == "torch._utils._rebuild_tensor") {
      if (a.size() < 4 || a[0]->kind != K::kStorage) fail(name + " without a storage, offset, size and stride");
      Ptr t = make(K::kTensor);
      t->tensor = a[0]->tensor.as_strided(ints(a[2]), ints(a[3]), a[1]->integer).clone();
      return t;
    }
    if (name == "torch._utils._rebuild_parameter" || name == "torch._utils._rebuild_parameter_with_state") {
      if (a.empty() || a[0]->kind != K::kTensor) fail(name + " without a tensor");
      return a[0];
    }
    // LibTorch's own pickler (torch::pickle_save) tags containers with their TorchScript type.
    if (name == "torch.jit._pickle.restore_type_tag" && !a.empty()) return a[0];
    if (name == "copyreg._reconstructor" && !a.empty()) return make_text(K::kObject, a[0]->text);
    // Any other class (a pickled module's own, torch.nn.Linear...): an object that BUILD fills.
    return make_text(K::kObject, name);
  }

  // ('storage', torch.<Type>Storage, key, location, numel): the record data/<key>.
  Ptr storage(const Ptr& pid) {
    const std::vector<Ptr>& a = pid->items;
    if (a.size() < 3 || a[0]->text != "storage") fail("a persistent id that is not a storage");
    const std::optional<at::ScalarType> dtype = storage_dtype(a[1]->text);
    if (!dtype) fail("a storage of type " + a[1]->text);
    const std::string& key = a[2]->text;
    Ptr& cached = storages_[key];
    if (cached) return cached;
    const std::string record = "data/" + key;
    if (!archive_.hasRecord(record)) fail("the record '" + record + "' is missing");
    auto [data, nbytes] = archive_.getRecord(record);
    const size_t item = c10::elementSize(*dtype);
    cached = make(Value::Kind::kStorage);
    cached->tensor = at::empty({static_cast<int64_t>(nbytes / item)}, at::TensorOptions().dtype(*dtype));
    std::memcpy(cached->tensor.data_ptr(), data.get(), nbytes - nbytes % item);
    return cached;
  }

  std::string path_;
  caffe2::serialize::PyTorchStreamReader& archive_;
  const char* data_;
  size_t size_, pos_ = 0;
  std::vector<Ptr> stack_;
  std::vector<size_t> marks_;
  std::map<size_t, Ptr> memo_;
  std::map<std::string, Ptr> storages_;
};

const Value* entry(const Value& dict, const std::string& key) {
  for (const auto& [k, v] : dict.entries)
    if (k->kind == Value::Kind::kString && k->text == key) return v.get();
  return nullptr;
}

// Deeper nesting than any model has: a pickle's memo can make a value contain itself.
constexpr int kMaxDepth = 64;

[[noreturn]] void too_deep(const std::string& path) {
  throw Error(MLH_ERR_INVALID_ARGUMENT, "--init-from '" + path + "': modules or dicts nested over " +
                                            std::to_string(kMaxDepth) + " deep (a value that contains itself?)");
}

// A pickled nn.Module's tensors as its state_dict() names them: _parameters, the persistent
// _buffers, then each of _modules under its name.
void flatten_module(const Value& module, const std::string& prefix, std::map<std::string, at::Tensor>& out,
                    const std::string& path, int depth = 0) {
  if (depth > kMaxDepth) too_deep(path);
  if (!module.state || module.state->kind != Value::Kind::kDict) return;
  const Value& state = *module.state;
  std::set<std::string> non_persistent;
  if (const Value* names = entry(state, "_non_persistent_buffers_set"))
    for (const Ptr& n : names->items) non_persistent.insert(n->text);
  for (const char* field : {"_parameters", "_buffers"})
    if (const Value* tensors = entry(state, field))
      for (const auto& [k, v] : tensors->entries)
        if (v->kind == Value::Kind::kTensor && !non_persistent.count(k->text)) out[prefix + k->text] = v->tensor;
  if (const Value* children = entry(state, "_modules"))
    for (const auto& [k, v] : children->entries)
      if (v->kind == Value::Kind::kObject) flatten_module(*v, prefix + k->text + ".", out, path, depth + 1);
}

bool is_module(const Value& v) {
  return v.kind == Value::Kind::kObject && v.state && v.state->kind == Value::Kind::kDict &&
         entry(*v.state, "_parameters") != nullptr;
}

std::map<std::string, at::Tensor> tensors_of(const Value& root, const std::string& path, int depth = 0) {
  if (depth > kMaxDepth) too_deep(path);
  std::map<std::string, at::Tensor> out;
  if (is_module(root)) {
    flatten_module(root, "", out, path);
    return out;
  }
  if (root.kind != Value::Kind::kDict)
    throw Error(MLH_ERR_INVALID_ARGUMENT, "--init-from '" + path + "': torch.save wrote " +
                                              (root.kind == Value::Kind::kObject ? "an object of class " + root.text
                                                                                 : std::string("a value")) +
                                              ", not a state dict (a dict of tensors) or a module");
  for (const char* key : {"state_dict", "model"})
    if (const Value* inner = entry(root, key); inner && (inner->kind == Value::Kind::kDict || is_module(*inner)))
      return tensors_of(*inner, path, depth + 1);
  for (const auto& [k, v] : root.entries)
    if (k->kind == Value::Kind::kString && v->kind == Value::Kind::kTensor) out[k->text] = v->tensor;
  return out;
}

}  // namespace

std::map<std::string, at::Tensor> read_torch_save_tensors(const std::string& path) {
  try {
    caffe2::serialize::PyTorchStreamReader archive(path);
    if (!archive.hasRecord("data.pkl"))
      throw Error(MLH_ERR_INVALID_ARGUMENT, "--init-from '" + path + "': a zip archive without data.pkl (not torch.save's)");
    auto [pickle, size] = archive.getRecord("data.pkl");
    Unpickler unpickler(path, archive, static_cast<const char*>(pickle.get()), size);
    const Ptr root = unpickler.run();
    return tensors_of(*root, path);
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    throw Error(MLH_ERR_INVALID_ARGUMENT,
                "--init-from '" + path + "': unreadable torch.save archive: " + what.substr(0, what.find('\n')));
  }
}

}  // namespace mlh::rt
