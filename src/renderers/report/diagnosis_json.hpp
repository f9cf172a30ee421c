// The diagnosis in the report JSON: the `diagnosis` list, best first
// (docs/report-json.md).
#pragma once

#include <string>

#include "analyses/diagnosis/diagnosis.hpp"
#include "renderers/json_writer.hpp"

namespace stepscope {

// A finding's fields (id, severity, title, evidence, ...) into `o`, an
// object being written to `out`, for findings that carry fields of their own.
void append_finding_fields(JsonObject& o, std::string& out, const Finding& finding);

// Appends `[finding, ...]`.
void append_diagnosis_json(const Diagnosis& diagnosis, std::string& out);

}  // namespace stepscope
