#include "collectors/sysmon/cgroup_memory.hpp"

#include <algorithm>

#include "collectors/process/proc_files.hpp"
#include "collectors/process/proc_text.hpp"

namespace stepscope {

namespace {

// Limits at or above this are "no limit": v1 writes unlimited as INT64_MAX
// rounded down to a page (9223372036854771712), and no machine has 2^60 bytes.
constexpr uint64_t kNoLimitFrom = uint64_t{1} << 60;

// A value file's text without its newline: "536870912\n" -> 536870912.
std::optional<uint64_t> parse_u64(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  return parse_number<uint64_t>(text);
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

// Whether the comma-separated `options` ("rw,memory") hold `wanted`.
bool has_option(std::string_view options, std::string_view wanted) {
  for (size_t start = 0; start <= options.size();) {
    size_t end = std::min(options.find(',', start), options.size());
    if (options.substr(start, end - start) == wanted) return true;
    start = end + 1;
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

}  // namespace

std::vector<CgroupMount> parse_cgroup_mounts(std::string_view mountinfo) {
  std::vector<CgroupMount> mounts;
  for_each_line(mountinfo, [&](std::string_view line) {
    std::vector<std::string_view> fields = split_fields(line);
    size_t dash = 0;
    while (dash < fields.size() && fields[dash] != "-") ++dash;
    if (dash < 6 || dash + 1 >= fields.size()) return;  // no "-", or nothing after it
    std::string_view type = fields[dash + 1];
    std::string_view super_options = dash + 3 < fields.size() ? fields[dash + 3] : std::string_view();
    int version = type == "cgroup2" ? 2 : type == "cgroup" && has_option(super_options, "memory") ? 1 : 0;
    if (version != 0) mounts.push_back({version, decode_octal_escapes(fields[3]), decode_octal_escapes(fields[4])});
  });
  return mounts;
}

std::optional<CgroupDir> memory_cgroup_dir(std::string_view proc_pid_cgroup, const std::vector<CgroupMount>& mounts) {
  std::optional<std::string> v1_path, v2_path;
  for_each_line(proc_pid_cgroup, [&](std::string_view line) {  // "4:memory:/path", v2 "0::/path"
    size_t first = line.find(':');
    size_t second = first == std::string_view::npos ? first : line.find(':', first + 1);
    if (second == std::string_view::npos) return;
    std::string_view controllers = line.substr(first + 1, second - first - 1);
    std::string path(line.substr(second + 1));
    if (line.substr(0, first) == "0" && controllers.empty()) {
      v2_path = path;
    } else if (has_option(controllers, "memory")) {
      v1_path = path;
    }
  });
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
  if (text == "max\n" || text == "max") return std::nullopt;
  auto value = parse_u64(text);
  if (!value || *value >= kNoLimitFrom) return std::nullopt;
  return value;
}

std::optional<uint64_t> memory_stat_field(std::string_view stat, std::string_view key) {
  std::optional<uint64_t> value;
  for_each_line(stat, [&](std::string_view line) {  // "key value"
    if (value || line.size() <= key.size() || !line.starts_with(key) || line[key.size()] != ' ') return;
    value = parse_number<uint64_t>(line.substr(key.size() + 1));
  });
  return value;
}

CgroupMemoryFiles::CgroupMemoryFiles(const CgroupDir& dir)
    : version_(dir.version),
      usage_(dir.path + (dir.version == 1 ? "/memory.usage_in_bytes" : "/memory.current"), KeptFile::Shape::kWhole),
      stat_(dir.path + "/memory.stat", KeptFile::Shape::kWhole) {
  if (version_ == 1) {
    limits_.emplace_back(dir.path + "/memory.limit_in_bytes", KeptFile::Shape::kWhole);
    return;
  }
  for (std::string path = dir.path; path.size() > dir.mount_point.size(); path.resize(path.rfind('/'))) {
    limits_.emplace_back(path + "/memory.max", KeptFile::Shape::kWhole);
  }
}

// The least limit on the way from the cgroup up to its hierarchy's root (v2
// has no effective-limit file; v1's memory.stat has hierarchical_memory_limit).
std::optional<uint64_t> CgroupMemoryFiles::effective_limit(std::string_view stat) {
  if (version_ == 1) {
    if (auto limit = memory_stat_field(stat, "hierarchical_memory_limit")) {
      return *limit >= kNoLimitFrom ? std::nullopt : limit;
    }
  }
  std::optional<uint64_t> least;
  for (KeptFile& file : limits_) {
    auto text = file.read();
    auto limit = text ? parse_cgroup_limit(*text) : std::nullopt;
    if (limit && (!least || *limit < *least)) least = limit;
  }
  return least;
}

std::optional<CgroupMemory> CgroupMemoryFiles::read(bool limits_too) {
  auto usage_text = usage_.read();
  auto usage = usage_text ? parse_u64(*usage_text) : std::nullopt;
  if (!usage) return std::nullopt;
  std::string_view stat = stat_.read().value_or(std::string_view());
  CgroupMemory out;
  out.version = version_;
  out.usage_bytes = *usage;
  if (limits_too || !limit_read_) {
    limit_ = effective_limit(stat);
    limit_read_ = true;
  }
  out.limit_bytes = limit_;
  // v1's total_ counts the cgroup's descendants too, as its usage does.
  const bool v1 = version_ == 1;
  auto inactive = memory_stat_field(stat, v1 ? "total_inactive_file" : "inactive_file");
  if (!inactive && v1) inactive = memory_stat_field(stat, "inactive_file");
  out.working_set_bytes = *usage - std::min(*usage, inactive.value_or(0));
  return out;
}

std::optional<CgroupMemory> read_cgroup_memory(const CgroupDir& dir) { return CgroupMemoryFiles(dir).read(); }

CgroupMemoryReader::CgroupMemoryReader()
    : mounts_(parse_cgroup_mounts(read_proc_file("/proc/self/mountinfo").value_or(""))) {}

std::optional<CgroupMemory> CgroupMemoryReader::read(pid_t pid, int64_t now_ns) {
  if (mounts_.empty()) return std::nullopt;
  const bool check = pid != pid_ || now_ns >= next_check_ns_;
  if (check) {
    next_check_ns_ = now_ns + kMembershipInterval;
    check_membership(pid);
  }
  return files_ ? files_->read(check) : std::nullopt;
}

// Opens the files of the cgroup `pid` is in, unless they are those open now;
// none when it has none (or is gone).
void CgroupMemoryReader::check_membership(pid_t pid) {
  if (pid != pid_) {
    pid_ = pid;
    membership_ = KeptFile("/proc/" + std::to_string(pid) + "/cgroup", KeptFile::Shape::kWhole);
    files_.reset();
  }
  auto text = membership_.read();
  if (!text) {
    files_.reset();
    return;
  }
  if (files_ && *text == membership_text_) return;
  files_.reset();
  membership_text_ = *text;
  if (auto dir = memory_cgroup_dir(*text, mounts_)) files_.emplace(*dir);
}

}  // namespace stepscope
