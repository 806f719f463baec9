#include "cpu_cgroup.hpp"

#include <algorithm>
#include <optional>

#include "cpu_text.hpp"

namespace mlh::cpu {
namespace {

struct Mount {
  std::string point;  // where it is mounted
  std::string root;   // which directory of the hierarchy appears there
};

bool has(const std::vector<std::string_view>& list, std::string_view item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// A v1 hierarchy is picked by `controller`; the v2 one when `controller` is empty.
// mountinfo line: "id parent major:minor root point options [optional...] - fstype source superoptions".
std::optional<Mount> find_mount(std::string_view mountinfo, std::string_view controller) {
  for (std::string_view line : split(mountinfo, '\n')) {
    size_t dash = line.find(" - ");
    if (dash == std::string_view::npos) continue;
    std::vector<std::string_view> left = words(line.substr(0, dash));
    std::vector<std::string_view> right = words(line.substr(dash + 3));
    if (left.size() < 5 || right.size() < 3) continue;
    bool match = controller.empty() ? right[0] == "cgroup2"
                                    : right[0] == "cgroup" && has(split(right[2], ','), controller);
    if (match) return Mount{std::string(left[4]), std::string(left[3])};
  }
  return std::nullopt;
}

// /proc/self/cgroup line: "hierarchy-id:controller-list:path"; v2 is "0::path".
std::optional<std::string> find_path(std::string_view proc_cgroup, std::string_view controller) {
  for (std::string_view line : split(proc_cgroup, '\n')) {
    size_t first = line.find(':');
    size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    std::string_view id = line.substr(0, first);
    std::string_view controllers = line.substr(first + 1, second - first - 1);
    bool match = controller.empty() ? id == "0" && controllers.empty() : has(split(controllers, ','), controller);
    if (match) return std::string(trim(line.substr(second + 1)));
  }
  return std::nullopt;
}

std::string without_trailing_slashes(std::string s) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

std::vector<std::string> dirs_up_to_mount(const std::optional<Mount>& mount, const std::optional<std::string>& path) {
  if (!mount || !path || path->empty() || path->front() != '/') return {};
  std::string relative = *path;
  // The mount shows the hierarchy from its root down. A path outside that root (cgroup
  // namespaces show those as "/../.."; a container may see its host-side path) means the
  // mount point itself is the process's cgroup.
  bool inside = mount->root == "/" ||
                (relative.compare(0, mount->root.size(), mount->root) == 0 &&
                 (relative.size() == mount->root.size() || relative[mount->root.size()] == '/'));
  if (!inside || relative.find("/..") != std::string::npos) relative = "/";
  else if (mount->root != "/") relative.erase(0, mount->root.size());

  std::string top = without_trailing_slashes(mount->point);
  std::string dir = without_trailing_slashes(top + relative);
  std::vector<std::string> dirs{dir};
  while (dir.size() > top.size()) {
    dir.erase(dir.rfind('/'));
    dirs.push_back(dir.empty() ? "/" : dir);
  }
  return dirs;
}

std::vector<std::string> dirs_for(std::string_view proc_cgroup, std::string_view mountinfo,
                                  std::string_view controller) {
  return dirs_up_to_mount(find_mount(mountinfo, controller), find_path(proc_cgroup, controller));
}

}  // namespace

CgroupDirs find_cgroup_dirs(std::string_view proc_cgroup, std::string_view mountinfo) {
  return {dirs_for(proc_cgroup, mountinfo, ""), dirs_for(proc_cgroup, mountinfo, "cpu"),
          dirs_for(proc_cgroup, mountinfo, "memory")};
}

}  // namespace mlh::cpu
