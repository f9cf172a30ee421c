#include "analyses/ranks.hpp"

#include <simdjson.h>

#include <fmt/format.h>

namespace stepscope {

std::optional<std::string> process_fact(const Run& run, int64_t pid, std::string_view key) {
  for (const char* source : {"hooks", "process"}) {
    auto it = run.metadata.find(fmt::format("{}.{}.{}", source, pid, key));
    if (it != run.metadata.end()) return it->second;
  }
  return std::nullopt;
}

std::optional<int64_t> process_rank(const Run& run, int64_t pid) { return process_number(run, pid, "rank"); }

std::optional<int64_t> process_number(const Run& run, int64_t pid, std::string_view key) {
  auto text = process_fact(run, pid, key);
  if (!text || text->empty() || text->size() > 9) return std::nullopt;
  for (char c : *text) {
    if (c < '0' || c > '9') return std::nullopt;
  }
  return std::stoll(*text);
}

std::optional<int64_t> trace_rank(const Run& run) {
  auto found = run.metadata.find("distributedInfo");
  if (found == run.metadata.end()) return std::nullopt;
  simdjson::dom::parser parser;
  simdjson::padded_string json(found->second);
  simdjson::dom::element root;
  if (parser.parse(json).get(root)) return std::nullopt;
  int64_t rank = 0;
  if (root["rank"].get_int64().get(rank)) return std::nullopt;
  return rank;
}

std::optional<int64_t> run_rank(const Run& run) {
  if (auto rank = trace_rank(run)) return rank;
  std::optional<int64_t> only;
  for (const Process& process : run.processes) {
    std::optional<int64_t> rank = process_rank(run, process.pid);
    if (!rank) continue;
    if (only && *only != *rank) return std::nullopt;
    only = rank;
  }
  return only;
}

}  // namespace stepscope
