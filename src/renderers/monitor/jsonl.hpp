// `monitor --format jsonl`: one JSON object per sample and line, for
// scripts and log shippers (see docs/monitor.md for the fields).
#pragma once

#include <string>

#include "collectors/sysmon/sysmon.hpp"

namespace stepscope {

// The sample as one line of JSON, ending in a newline. Metrics a device does
// not offer are null; process and GPU names are escaped.
std::string monitor_jsonl_line(const SysmonSample& sample);

}  // namespace stepscope
