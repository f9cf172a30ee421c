// Formatting shared by compare's renderers (text, Markdown): values in
// their units, changes and intervals as percentages.
#pragma once

#include <string>
#include <string_view>

#include "analyses/compare/compare.hpp"

namespace stepscope {

// "20.31 ms", "1234.5 samples/s", "512.0 MiB".
std::string format_metric_value(const MetricComparison& m, double value);

// "+30.0%"; the interval "[+28.1%, +31.9%]", or "-" for a metric without one.
std::string format_change(double change);
std::string format_interval(const MetricComparison& m);
std::string format_p_value(const MetricComparison& m);

// A named-cost value in its table's unit: "12.3%" or "4.56 ms".
std::string format_diff_value(const DiffTable& table, double value);

// Names in the sections' tables are cut to this many characters, kernels'
// parameter lists first (fitted_name); the JSON keeps them whole.
inline constexpr size_t kShownNameChars = 100;

// A one-line summary of the outcome: which gating metrics regressed, or none.
std::string compare_outcome(const CompareResult& result);

}  // namespace stepscope
