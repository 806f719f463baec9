#include "fixtures.hpp"

namespace trm_test {

SmallSplit small_split(int groups, int per_group, int seq_len, int vocab) {
  SmallSplit s;
  s.meta.pad_id = 0;
  s.meta.ignore_label_id = 0;
  s.meta.blank_identifier_id = 0;
  s.meta.vocab_size = vocab;
  s.meta.seq_len = seq_len;
  s.meta.num_puzzle_identifiers = 7;
  s.meta.mean_puzzle_examples = 2;
  s.set.name = "all";
  s.set.puzzle_indices.push_back(0);
  s.set.group_indices.push_back(0);
  int e = 0, p = 0;
  for (int g = 0; g < groups; ++g) {
    for (int q = 0; q < per_group; ++q, ++p) {
      for (int x = 0; x < 1 + p % 3; ++x, ++e) {
        for (int k = 0; k < seq_len; ++k) {
          s.set.inputs.push_back(1 + (e + k) % (vocab - 1));
          s.set.labels.push_back(e % vocab);
        }
      }
      s.set.puzzle_indices.push_back(e);
      s.set.puzzle_identifiers.push_back(1 + p % 6);
    }
    s.set.group_indices.push_back(p);
  }
  s.meta.total_groups = groups;
  s.meta.total_puzzles = groups;
  return s;
}

}  // namespace trm_test
