#include "episode_fit.hpp"

#include <algorithm>

#include <mlh/plugin.hpp>

namespace protonet {

namespace {

// How many of `sizes` (sorted, largest first) have at least `n` images.
int with_at_least(const std::vector<int64_t>& sizes, int64_t n) {
  return static_cast<int>(std::count_if(sizes.begin(), sizes.end(), [n](int64_t s) { return s >= n; }));
}

std::string images(int64_t n) { return std::to_string(n) + (n == 1 ? " image" : " images"); }

}  // namespace

EpisodeFit fit_episodes(const std::vector<ClassSize>& classes, const EpisodeShape& asked, const ShapeFields& fields,
                        const std::string& what) {
  std::vector<int64_t> sizes;
  for (const ClassSize& c : classes) sizes.push_back(c.images);
  std::sort(sizes.rbegin(), sizes.rend());
  if (with_at_least(sizes, 2) < 2)
    throw mlh::DataError(
        what + " set: no episode can be made from it: " + std::to_string(classes.size()) + " class" +
        (classes.size() == 1 ? "" : "es") + (sizes.empty() ? "" : ", the largest with " + images(sizes[0])) +
        "; an episode needs at least 2 classes of at least 2 images each (1 support and 1 query image)");

  EpisodeFit fit;
  EpisodeShape& s = fit.shape;
  s = asked;
  // 1. and 3.: the shot kept where two classes have room for it and a query image, else the
  // largest shot two classes have room for.
  if (with_at_least(sizes, asked.shot + 1) < 2) {
    s.shot = static_cast<int>(sizes[1] - 1);
    fit.changes.push_back(what + " episodes: " + std::to_string(s.shot) + "-shot, not the " +
                          std::to_string(asked.shot) + "-shot " + fields.shot + " asks: only " +
                          std::to_string(with_at_least(sizes, asked.shot + 1)) + " of its classes have " +
                          images(asked.shot + 1) + " (set " + fields.shot + "=" + std::to_string(s.shot) +
                          " to ask for it)");
    fit.changed_fields.push_back(fields.shot);
  }
  const int room = with_at_least(sizes, s.shot + 1);
  if (room < asked.way) {
    s.way = room;
    fit.changes.push_back(what + " episodes: " + std::to_string(s.way) + "-way, not the " + std::to_string(asked.way) +
                          "-way " + fields.way + " asks: the " + what + " set has " + std::to_string(s.way) +
                          (classes.size() > static_cast<size_t>(s.way)
                               ? " classes with " + images(s.shot + 1) + " or more (" + std::to_string(s.shot) +
                                     " support and a query image)"
                               : " classes") +
                          " (set " + fields.way + "=" + std::to_string(s.way) + " to ask for it)");
    fit.changed_fields.push_back(fields.way);
  }
  // 2. The query: what the way-th largest class has beyond the shot.
  const int64_t smallest = sizes[static_cast<size_t>(s.way - 1)];
  if (smallest < s.shot + asked.query) {
    s.query = static_cast<int>(smallest - s.shot);
    fit.changes.push_back(what + " episodes: " + std::to_string(s.query) + "-query, not the " +
                          std::to_string(asked.query) + "-query " + fields.query + " asks: " +
                          "the " + std::to_string(s.way) + " largest classes have " + images(smallest) +
                          " or more, " + std::to_string(s.shot) + " of them support (set " +
                          fields.query + "=" + std::to_string(s.query) + " to ask for it)");
    fit.changed_fields.push_back(fields.query);
  }
  for (const ClassSize& c : classes)
    if (c.images < s.shot + s.query) fit.dropped.push_back(c);
  return fit;
}

}  // namespace protonet
