// The diagnosis in the report JSON: the `diagnosis` list, best first
// (docs/report-json.md).
#pragma once

#include <string>

#include "analyses/diagnosis/diagnosis.hpp"

namespace stepscope {

// Appends `[finding, ...]`.
void append_diagnosis_json(const Diagnosis& diagnosis, std::string& out);

}  // namespace stepscope
