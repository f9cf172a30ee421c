#include "analyses/device/properties.hpp"

#include <simdjson.h>

namespace stepscope {

std::map<int, double> device_memory_capacities(const Run& run) {
  std::map<int, double> out;
  auto found = run.metadata.find("deviceProperties");
  if (found == run.metadata.end()) return out;
  simdjson::dom::parser parser;
  simdjson::dom::array devices;
  if (parser.parse(found->second).get_array().get(devices)) return out;
  for (simdjson::dom::element device : devices) {
    int64_t id = -1;
    uint64_t bytes = 0;
    if (device["id"].get_int64().get(id) || id < 0 || id > INT32_MAX) continue;
    if (device["totalGlobalMem"].get_uint64().get(bytes) || bytes == 0) continue;
    out[static_cast<int>(id)] = static_cast<double>(bytes);
  }
  return out;
}

}  // namespace stepscope
