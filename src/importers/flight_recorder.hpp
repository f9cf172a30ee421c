// torch's Flight Recorder state, as torch.distributed's
// _dump_fr_trace_json gives it (the same document its analyzer,
// torch.distributed.flight_recorder.fr_trace, reads): the last collectives of
// every process group of one rank, and how far each group got.
#pragma once

#include <string>
#include <string_view>

#include <simdjson.h>

#include "run/dump.hpp"

namespace stepscope {

// The Flight Recorder of `document`; an InputError naming `where` when it is
// not one. Fields a torch version leaves out are left at their defaults.
FlightRecorder flight_recorder_from(simdjson::dom::element document, const std::string& where);

// The same from JSON text (a rank's answer to `dump`).
FlightRecorder parse_flight_recorder(std::string_view json, const std::string& where);

}  // namespace stepscope
