#include "importers/flight_recorder.hpp"

#include <charconv>

#include <fmt/format.h>

#include "importers/dom_fields.hpp"
#include "util/error.hpp"

namespace stepscope {

namespace {

using simdjson::dom::element;

std::vector<std::vector<int64_t>> sizes_of(element object) {
  std::vector<std::vector<int64_t>> sizes;
  simdjson::dom::array tensors;
  if (object["input_sizes"].get_array().get(tensors) != simdjson::SUCCESS) return sizes;
  for (element tensor : tensors) {
    std::vector<int64_t>& shape = sizes.emplace_back();
    simdjson::dom::array dims;
    if (tensor.get_array().get(dims) != simdjson::SUCCESS) continue;
    for (element dim : dims) shape.push_back(dom_integer(dim).value_or(-1));
  }
  return sizes;
}

FlightEntry entry_of(element object) {
  FlightEntry entry;
  simdjson::dom::array group;
  if (object["process_group"].get_array().get(group) == simdjson::SUCCESS && group.size() >= 2) {
    entry.process_group = dom_text(group.at(0));
    entry.group_name = dom_text(group.at(1));
  }
  if (entry.process_group.empty()) entry.process_group = text_field(object, "pg_id");
  entry.collective_seq = integer_field(object, "collective_seq_id").value_or(0);
  entry.profiling_name = text_field(object, "profiling_name");
  entry.state = text_field(object, "state");
  bool retired = false;
  if (object["retired"].get_bool().get(retired) == simdjson::SUCCESS) entry.retired = retired;
  entry.input_sizes = sizes_of(object);
  return entry;
}

// "[0, 1]" (torch writes a group's ranks as text) or [0, 1].
std::vector<int64_t> ranks_of(element value) {
  std::vector<int64_t> ranks;
  simdjson::dom::array list;
  if (value.get_array().get(list) == simdjson::SUCCESS) {
    for (element rank : list) {
      if (auto number = dom_integer(rank)) ranks.push_back(*number);
    }
    return ranks;
  }
  std::string_view text;
  if (value.get_string().get(text) != simdjson::SUCCESS) return ranks;
  const char* at = text.data();
  const char* end = text.data() + text.size();
  while (at < end) {
    int64_t number = 0;
    auto [next, ec] = std::from_chars(at, end, number);
    if (ec == std::errc()) {
      ranks.push_back(number);
      at = next;
    } else {
      ++at;
    }
  }
  return ranks;
}

void read_groups(element document, FlightRecorder& recorder) {
  simdjson::dom::object status;
  if (document["pg_status"].get_object().get(status) == simdjson::SUCCESS) {
    for (auto [id, group] : status) {
      recorder.groups[std::string(id)] = {integer_field(group, "last_enqueued_collective").value_or(-1),
                                          integer_field(group, "last_started_collective").value_or(-1),
                                          integer_field(group, "last_completed_collective").value_or(-1)};
    }
  }
  // pg_config names each group's ranks by its id where torch knows them
  // (NCCL does; torch 2.12's gloo leaves one entry "" without ranks).
  simdjson::dom::object config;
  if (document["pg_config"].get_object().get(config) != simdjson::SUCCESS) return;
  for (auto [id, group] : config) {
    element ranks;
    if (group["ranks"].get(ranks) != simdjson::SUCCESS) continue;
    recorder.group_ranks[std::string(id)] = ranks_of(ranks);
  }
}

}  // namespace

FlightRecorder flight_recorder_from(element document, const std::string& where) {
  simdjson::dom::array entries;
  if (!document.is_object() || document["entries"].get_array().get(entries) != simdjson::SUCCESS) {
    throw InputError(fmt::format("{}: not torch's Flight Recorder state (no \"entries\" list)", where));
  }
  FlightRecorder recorder;
  recorder.json = simdjson::minify(document);
  recorder.version = text_field(document, "version");
  for (element entry : entries) {
    if (entry.is_object()) recorder.entries.push_back(entry_of(entry));
  }
  read_groups(document, recorder);
  return recorder;
}

FlightRecorder parse_flight_recorder(std::string_view json, const std::string& where) {
  simdjson::dom::parser parser;
  element document;
  simdjson::padded_string padded(json);
  if (auto error = parser.parse(padded).get(document)) {
    throw InputError(fmt::format("{}: not JSON: {}", where, simdjson::error_message(error)));
  }
  return flight_recorder_from(document, where);
}

}  // namespace stepscope
