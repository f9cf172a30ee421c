#include "collectors/cgroup_memory.hpp"

#include <charconv>

#include "collectors/proc_files.hpp"

namespace stepscope {

namespace {

// Limits at or above this are "no limit": v1 writes unlimited as INT64_MAX
// rounded down to a page (9223372036854771712), and no machine has 2^60 bytes.
constexpr uint64_t kNoLimitFrom = uint64_t{1} << 60;

std::vector<std::string_view> split(std::string_view text, char separator) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  for (;;) {
    size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  return text;
}

std::optional<uint64_t> parse_u64(std::string_view text) {
  text = trim(text);
  uint64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// mountinfo writes space, tab, newline and backslash in paths as \ooo.
std::string decode_octal_escapes(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '\\' && i + 3 < text.size()) {
      std::string_view digits = text.substr(i + 1, 3);
      if (digits.find_first_not_of("01234567") == std::string_view::npos) {
        out += static_cast<char>((digits[0] - '0') * 64 + (digits[1] - '0') * 8 + (digits[2] - '0'));
        i += 3;
        continue;
      }
    }
    out += text[i];
  }
  return out;
}

bool has_option(std::string_view options, std::string_view wanted) {
  for (std::string_view option : split(options, ',')) {
    if (option == wanted) return true;
  }
  return false;
}

// `path` below `root` (both cgroup paths), or nullopt when it is not below it.
std::optional<std::string> relative_to(std::string_view path, std::string_view root) {
  if (root == "/") return std::string(path);
  if (path.substr(0, root.size()) != root || (path.size() > root.size() && path[root.size()] != '/')) {
    return std::nullopt;
  }
  return std::string(path.substr(root.size()));
}

std::optional<uint64_t> read_number_file(const std::string& path) {
  auto text = read_proc_file(path);
  return text ? parse_u64(*text) : std::nullopt;
}

// The least limit on the way from `dir` up to its hierarchy's root (v2 has
// no effective-limit file; v1's memory.stat has hierarchical_memory_limit).
std::optional<uint64_t> effective_limit(const CgroupDir& dir, std::string_view stat) {
  if (dir.version == 1) {
    if (auto limit = memory_stat_field(stat, "hierarchical_memory_limit")) {
      return *limit >= kNoLimitFrom ? std::nullopt : limit;
    }
    auto text = read_proc_file(dir.path + "/memory.limit_in_bytes");
    return text ? parse_cgroup_limit(*text) : std::nullopt;
  }
  std::optional<uint64_t> least;
  for (std::string path = dir.path; path.size() > dir.mount_point.size(); path.resize(path.rfind('/'))) {
    auto text = read_proc_file(path + "/memory.max");
    auto limit = text ? parse_cgroup_limit(*text) : std::nullopt;
    if (limit && (!least || *limit < *least)) least = limit;
  }
  return least;
}

}  // namespace

std::vector<CgroupMount> parse_cgroup_mounts(std::string_view mountinfo) {
  std::vector<CgroupMount> mounts;
  for (std::string_view line : split(mountinfo, '\n')) {
    std::vector<std::string_view> fields = split(line, ' ');
    size_t dash = 0;
    while (dash < fields.size() && fields[dash] != "-") ++dash;
    if (dash < 6 || dash + 1 >= fields.size()) continue;  // no "-", or nothing after it
    std::string_view type = fields[dash + 1];
    std::string_view super_options = dash + 3 < fields.size() ? fields[dash + 3] : std::string_view();
    int version = type == "cgroup2" ? 2 : type == "cgroup" && has_option(super_options, "memory") ? 1 : 0;
    if (version == 0) continue;
    mounts.push_back({version, decode_octal_escapes(fields[3]), decode_octal_escapes(fields[4])});
  }
  return mounts;
}

std::optional<CgroupDir> memory_cgroup_dir(std::string_view proc_pid_cgroup, const std::vector<CgroupMount>& mounts) {
  std::optional<std::string> v1_path, v2_path;
  for (std::string_view line : split(proc_pid_cgroup, '\n')) {
    size_t first = line.find(':');
    size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) continue;
    std::string_view controllers = line.substr(first + 1, second - first - 1);
    std::string path(line.substr(second + 1));
    if (line.substr(0, first) == "0" && controllers.empty()) {
      v2_path = path;
    } else if (has_option(controllers, "memory")) {
      v1_path = path;
    }
  }
  for (int version : {1, 2}) {
    const std::optional<std::string>& path = version == 1 ? v1_path : v2_path;
    if (!path) continue;
    for (const CgroupMount& mount : mounts) {
      if (mount.version != version) continue;
      if (auto below = relative_to(*path, mount.root)) {
        std::string dir = mount.mount_point + (*below == "/" ? "" : *below);
        return CgroupDir{version, dir, mount.mount_point};
      }
    }
  }
  return std::nullopt;
}

std::optional<uint64_t> parse_cgroup_limit(std::string_view text) {
  text = trim(text);
  if (text == "max") return std::nullopt;
  auto value = parse_u64(text);
  if (!value || *value >= kNoLimitFrom) return std::nullopt;
  return value;
}

std::optional<uint64_t> memory_stat_field(std::string_view stat, std::string_view key) {
  for (std::string_view line : split(stat, '\n')) {
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ' ') {
      return parse_u64(line.substr(key.size() + 1));
    }
  }
  return std::nullopt;
}

std::optional<CgroupMemory> read_cgroup_memory(const CgroupDir& dir) {
  bool v1 = dir.version == 1;
  auto usage = read_number_file(dir.path + (v1 ? "/memory.usage_in_bytes" : "/memory.current"));
  if (!usage) return std::nullopt;  // the root of a v2 hierarchy has no memory.current
  std::string stat = read_proc_file(dir.path + "/memory.stat").value_or("");
  CgroupMemory out;
  out.version = dir.version;
  out.usage_bytes = *usage;
  out.limit_bytes = effective_limit(dir, stat);
  // v1's total_ counts the cgroup's descendants too, as its usage does.
  auto inactive = memory_stat_field(stat, v1 ? "total_inactive_file" : "inactive_file");
  if (!inactive && v1) inactive = memory_stat_field(stat, "inactive_file");
  out.working_set_bytes = *usage - std::min(*usage, inactive.value_or(0));
  return out;
}

CgroupMemoryReader::CgroupMemoryReader()
    : mounts_(parse_cgroup_mounts(read_proc_file("/proc/self/mountinfo").value_or(""))) {}

std::optional<CgroupMemory> CgroupMemoryReader::read(pid_t pid) const {
  if (mounts_.empty()) return std::nullopt;
  auto text = read_proc_file("/proc/" + std::to_string(pid) + "/cgroup");
  if (!text) return std::nullopt;
  auto dir = memory_cgroup_dir(*text, mounts_);
  return dir ? read_cgroup_memory(*dir) : std::nullopt;
}

}  // namespace stepscope
