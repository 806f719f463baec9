#include "omniglot.hpp"

#include <map>
#include <set>
#include <sstream>

#include "fs_util.hpp"
#include "splits.hpp"

namespace protonet {
namespace {

const int kRotations[4] = {0, 90, 180, 270};

std::string rot_name(int deg) {
  const std::string d = std::to_string(deg);
  return "rot" + std::string(3 - d.size(), '0') + d;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// Where "<Alphabet>/<character>" folders live: images_background/ and images_evaluation/
// when either exists (the official archives unpack so), else the root itself.
std::vector<std::string> image_roots(const std::string& root) {
  std::vector<std::string> roots;
  for (const char* sub : {"images_background", "images_evaluation"})
    if (is_dir(root + "/" + sub)) roots.push_back(root + "/" + sub);
  if (roots.empty()) roots.push_back(root);
  return roots;
}

// "<Alphabet>/<character>" -> its folder, over all image roots.
std::map<std::string, std::string> find_characters(const std::string& root) {
  std::map<std::string, std::string> chars;
  for (const std::string& base : image_roots(root)) {
    for (const std::string& alphabet : list_subdirs(base)) {
      if (base == root && alphabet == "splits") continue;  // the split files' folder
      for (const std::string& ch : list_subdirs(base + "/" + alphabet)) {
        const std::string key = alphabet + "/" + ch;
        const std::string dir = base + "/" + key;
        auto [it, inserted] = chars.emplace(key, dir);
        if (!inserted)
          throw DataError("Omniglot root '" + root + "': character '" + key + "' exists twice: '" + it->second +
                          "' and '" + dir + "'");
      }
    }
  }
  return chars;
}

std::vector<std::string> character_images(const std::string& dir) {
  std::vector<std::string> out;
  for (const std::string& f : list_files(dir))
    if (has_image_extension(f)) out.push_back(dir + "/" + f);
  if (out.empty()) throw DataError("Omniglot character folder '" + dir + "' holds no images");
  return out;
}

struct ClassRef {
  std::string character;  // "<Alphabet>/<character>"
  int rotation;
};

}  // namespace

FilePlan plan_omniglot(const DatasetSpec& spec) {
  if (spec.root.empty()) throw DataError("Omniglot dataset: no root folder given");
  if (!is_dir(spec.root)) throw DataError("Omniglot root '" + spec.root + "': not a folder");
  const std::vector<SplitList> lists = split_lists(spec);
  std::vector<ClassRef> classes;
  std::map<std::string, std::string> folders;  // character -> folder, for those used

  if (lists.empty()) {
    folders = find_characters(spec.root);
    if (folders.empty()) throw DataError("Omniglot root '" + spec.root + "': no <Alphabet>/<character> folders");
    for (const auto& [key, dir] : folders) {
      classes.push_back({key, 0});
      if (spec.rotations)
        for (int r = 1; r < 4; ++r) classes.push_back({key, kRotations[r]});
    }
  } else {
    const std::vector<std::string> roots = image_roots(spec.root);
    std::set<std::string> seen;
    for (const SplitList& list : lists) {
      std::istringstream in(list.text);
      std::string line;
      const size_t before = classes.size();
      for (int lineno = 1; std::getline(in, line); ++lineno) {
        line = trim(line);
        if (line.empty() || line[0] == '#') continue;
        const auto where = [&] { return "Omniglot split " + list.origin + " line " + std::to_string(lineno) + ": "; };
        // "<Alphabet>/<character>[/rotDDD]"
        std::vector<std::string> parts;
        for (size_t start = 0;;) {
          const size_t slash = line.find('/', start);
          parts.push_back(line.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
          if (slash == std::string::npos) break;
          start = slash + 1;
        }
        if (parts.size() < 2 || parts.size() > 3 || parts[0].empty() || parts[1].empty())
          throw DataError(where() + "'" + line + "' is not <Alphabet>/<character>[/rotDDD]");
        std::vector<int> rots;
        if (parts.size() == 3) {
          int deg = -1;
          for (int r : kRotations)
            if (parts[2] == rot_name(r)) deg = r;
          if (deg < 0) throw DataError(where() + "rotation '" + parts[2] + "' is not rot000, rot090, rot180 or rot270");
          rots.push_back(deg);
        } else {
          rots.push_back(0);
          if (spec.rotations) rots.insert(rots.end(), {90, 180, 270});
        }
        const std::string key = parts[0] + "/" + parts[1];
        if (!folders.count(key)) {
          std::string dir;
          for (const std::string& base : roots)
            if (is_dir(base + "/" + key)) {
              dir = base + "/" + key;
              break;
            }
          if (dir.empty()) throw DataError(where() + "character folder '" + spec.root + "/" + key + "' not found");
          folders[key] = dir;
        }
        for (int r : rots) {
          if (!seen.insert(key + "/" + rot_name(r)).second)
            throw DataError(where() + "class '" + key + "/" + rot_name(r) + "' is listed twice");
          classes.push_back({key, r});
        }
      }
      if (classes.size() == before) throw DataError("Omniglot split " + list.origin + " lists no classes");
    }
  }

  FilePlan plan;
  for (const SplitList& list : lists)
    if (!list.path.empty()) plan.sources.push_back(list.path);
  std::map<std::string, std::vector<std::string>> images;  // listed once per character
  for (const auto& [key, dir] : folders) {
    images[key] = character_images(dir);
    plan.sources.insert(plan.sources.end(), images[key].begin(), images[key].end());
  }
  for (const ClassRef& c : classes) {
    const int32_t label = static_cast<int32_t>(plan.class_names.size());
    plan.class_names.push_back(c.character + "/" + rot_name(c.rotation));
    for (const std::string& path : images[c.character]) plan.items.push_back({path, label, c.rotation});
  }
  return plan;
}

ImageSet load_omniglot(const DatasetSpec& spec) {
  return decode_plan(plan_omniglot(spec), {spec.channels, spec.height, spec.width, spec.invert});
}

}  // namespace protonet
