// What a Chrome-trace event category means to a Run: its span kind, and
// whether the importer knows it at all (unknown ones are kept as kOther,
// with a warning, rather than guessed into a kind analyses would trust).
#pragma once

#include <string_view>

#include "run/run.hpp"

namespace stepscope {

// The span kind of a trace event category (case-insensitive). `process_name`
// is consulted only when the category is empty: legacy autograd-profiler
// traces have no "cat" and name their pid "CPU functions"/"CUDA functions".
SpanKind chrome_category_kind(std::string_view category, std::string_view process_name = {});

// Whether `category` is one the importer knows: it maps to a kind, or it is
// a known category of slices that stay kOther (Kineto's "Trace", "overhead",
// flow categories, ...). An empty category is known (legacy traces).
bool is_known_chrome_category(std::string_view category);

}  // namespace stepscope
