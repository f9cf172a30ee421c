#include "collectors/job_identity.hpp"

#include <unistd.h>

#include <cstdlib>
#include <utility>

#include <fmt/format.h>

#include "util/error.hpp"

namespace stepscope {

namespace {

struct Found {
  std::string value;
  std::string from;
};

std::string basename_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Where torchrun's own arguments start in `command`: after `torchrun`, or
// after `-m torch.distributed.run` (or .launch); npos when it is not torchrun.
size_t torchrun_arguments(const std::vector<std::string>& command) {
  for (size_t i = 0; i < command.size(); ++i) {
    if (basename_of(command[i]) == "torchrun") return i + 1;
    if (command[i] == "-m" && i + 1 < command.size() &&
        (command[i + 1] == "torch.distributed.run" || command[i + 1] == "torch.distributed.launch")) {
      return i + 2;
    }
  }
  return std::string::npos;
}

// The value torchrun's option `name` (as --node-rank, --node_rank or
// --node-rank=N) has in `command`, looking only at torchrun's own arguments:
// those before the training script.
std::optional<Found> torchrun_option(const std::vector<std::string>& command, const std::string& name) {
  size_t first = torchrun_arguments(command);
  if (first == std::string::npos) return std::nullopt;
  std::string underscored = name;
  for (char& c : underscored) c = c == '-' ? '_' : c;
  for (size_t i = first; i < command.size(); ++i) {
    const std::string& arg = command[i];
    if (arg.ends_with(".py")) break;
    for (const std::string& spelling : {"--" + name, "--" + underscored}) {
      if (arg == spelling && i + 1 < command.size()) return Found{command[i + 1], "torchrun --" + name};
      if (arg.starts_with(spelling + "=")) return Found{arg.substr(spelling.size() + 1), "torchrun --" + name};
    }
  }
  return std::nullopt;
}

std::optional<Found> first_set(const Environment& env, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (auto value = env(name)) return Found{*value, name};
  }
  return std::nullopt;
}

bool is_decimal(const std::string& text) {
  if (text.empty() || text.size() > 9) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// A value as part of a file name: a job id or host name with a slash or a
// space would make another directory or a name a shell splits.
std::string file_name_part(const std::string& value) {
  std::string out;
  for (char c : value) {
    bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                 c == '_' || c == '-';
    out += plain ? c : '_';
  }
  return out;
}

std::string placeholder_value(const std::string& name, const JobIdentity& id) {
  if (name == "host") {
    if (id.host.empty()) throw InputError("record -o: {host}: this machine's host name cannot be read");
    return file_name_part(id.host);
  }
  if (name == "node_rank") {
    if (id.node_rank.empty()) {
      throw InputError(
          "record -o: {node_rank}: no node rank here: give torchrun --node-rank, or set NODE_RANK "
          "(PET_NODE_RANK, GROUP_RANK and SLURM_NODEID are read too)");
    }
    return id.node_rank;
  }
  if (name == "job") {
    if (id.job.empty()) {
      throw InputError(
          "record -o: {job}: no job id here: SLURM_JOB_ID, torchrun --rdzv-id, PET_RDZV_ID and "
          "TORCHELASTIC_RUN_ID are all unset");
    }
    return file_name_part(id.job);
  }
  throw InputError(fmt::format("record -o: unknown placeholder {{{}}}: the known ones are {{host}}, "
                               "{{node_rank}} and {{job}}", name));
}

}  // namespace

std::string this_host() {
  char host[256] = {};
  return gethostname(host, sizeof host - 1) == 0 ? std::string(host) : std::string();
}

Environment this_process_environment() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* value = std::getenv(name.c_str());
    if (value == nullptr || *value == '\0') return std::nullopt;
    return std::string(value);
  };
}

JobIdentity job_identity(const std::vector<std::string>& command, const Environment& env, std::string host) {
  JobIdentity id;
  id.host = std::move(host);
  std::optional<Found> node = torchrun_option(command, "node-rank");
  if (!node) node = first_set(env, {"PET_NODE_RANK", "NODE_RANK", "GROUP_RANK", "SLURM_NODEID"});
  if (node && is_decimal(node->value)) {
    id.node_rank = node->value;
    id.node_rank_from = node->from;
  }
  std::optional<Found> job = first_set(env, {"SLURM_JOB_ID"});
  if (!job) job = torchrun_option(command, "rdzv-id");
  if (!job) job = first_set(env, {"PET_RDZV_ID", "TORCHELASTIC_RUN_ID"});
  if (job && !job->value.empty()) {
    id.job = job->value;
    id.job_from = job->from;
  }
  return id;
}

std::string expand_output_path(std::string_view pattern, const JobIdentity& identity) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    size_t close = pattern[i] == '{' ? pattern.find('}', i) : std::string_view::npos;
    if (close == std::string_view::npos) {
      out += pattern[i];
      continue;
    }
    out += placeholder_value(std::string(pattern.substr(i + 1, close - i - 1)), identity);
    i = close;
  }
  return out;
}

void describe_job(Run& run, const JobIdentity& identity) {
  const std::pair<const char*, const std::string*> facts[] = {
      {"host", &identity.host}, {"node_rank", &identity.node_rank}, {"node_rank_from", &identity.node_rank_from},
      {"job", &identity.job}, {"job_from", &identity.job_from}};
  for (const auto& [key, value] : facts) {
    if (!value->empty()) run.metadata[key] = *value;
  }
}

}  // namespace stepscope
