#include "analyses/compare/sections.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "analyses/function_costs.hpp"
#include "analyses/profile.hpp"
#include "analyses/steps/profiler_steps.hpp"
#include "run/frame_label.hpp"

namespace stepscope {

namespace {

constexpr double kNsPerMs = 1e6;

std::string function_name(const StringTable& strings, const FunctionCost& f) {
  std::string name(shown_function(strings.get(f.function)));
  if (f.file != StringTable::kEmpty) name += " (" + strings.get(f.file) + ")";
  return name;
}

bool inside(const StepWindow& w, int64_t ts) { return ts >= w.start_ns && ts < w.end_ns; }

// Self time of each function in the stack profile of the window (start-up
// and warm-up left out), ms per step.
std::map<std::string, double> function_time_per_step(const Run& run, const StepWindow& w) {
  size_t steps = w.steps;
  Profile profile =
      build_profile(run, {.include_idle = run_wants_idle(run), .from_ns = w.start_ns, .to_ns = w.end_ns});
  FunctionCosts costs = function_costs(profile);
  std::map<std::string, double> out;
  if (steps == 0) return out;
  for (const FunctionCost& f : costs.functions) {
    out[function_name(run.strings, f)] += static_cast<double>(f.self_ns) / kNsPerMs / static_cast<double>(steps);
  }
  return out;
}

// Milliseconds per step of the spans of `kind` that start in the window, by name.
std::map<std::string, double> span_time_per_step(const Run& run, SpanKind kind, const StepWindow& w) {
  std::map<std::string, double> out;
  size_t steps = w.steps;
  if (steps == 0) return out;
  for (const Span& s : run.spans) {
    if (s.kind != kind || s.end_ns < s.start_ns || !inside(w, s.start_ns)) continue;
    const std::string& name = run.strings.get(s.name);
    if (is_profiler_step_name(name)) continue;
    out[name] += static_cast<double>(s.end_ns - s.start_ns) / kNsPerMs;
  }
  for (auto& [name, ms] : out) ms /= static_cast<double>(steps);
  return out;
}

void add_section(std::vector<DiffTable>& out, const char* key, const char* title, const char* unit,
                 const std::map<std::string, double>& base, const std::map<std::string, double>& cur, size_t top) {
  if (base.empty() && cur.empty()) return;
  out.push_back({key, title, unit, top_differences(base, cur, top)});
}

}  // namespace

std::vector<DiffRow> top_differences(const std::map<std::string, double>& base,
                                     const std::map<std::string, double>& cur, size_t top) {
  std::map<std::string, DiffRow> rows;
  for (const auto& [name, value] : base) rows[name] = {name, value, 0};
  for (const auto& [name, value] : cur) {
    DiffRow& row = rows.try_emplace(name, DiffRow{name, 0, 0}).first->second;
    row.cur = value;
  }
  std::vector<DiffRow> out;
  for (auto& [name, row] : rows) out.push_back(std::move(row));
  std::stable_sort(out.begin(), out.end(), [](const DiffRow& a, const DiffRow& b) {
    return std::fabs(a.cur - a.base) > std::fabs(b.cur - b.base);
  });
  if (out.size() > top) out.resize(top);
  return out;
}

std::vector<DiffTable> compare_sections(const Run& base, const StepWindow& base_window, const Run& cur,
                                        const StepWindow& cur_window, size_t top) {
  std::vector<DiffTable> out;
  add_section(out, "functions", "Top functions (self time per step, all threads)", "ms/step",
              function_time_per_step(base, base_window), function_time_per_step(cur, cur_window), top);
  add_section(out, "ops", "Operators (cpu_op spans, inclusive time per step)", "ms/step",
              span_time_per_step(base, SpanKind::kCpuOp, base_window),
              span_time_per_step(cur, SpanKind::kCpuOp, cur_window), top);
  add_section(out, "kernels", "Kernels (device time per step)", "ms/step",
              span_time_per_step(base, SpanKind::kKernel, base_window),
              span_time_per_step(cur, SpanKind::kKernel, cur_window), top);
  return out;
}

}  // namespace stepscope
