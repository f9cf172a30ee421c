#include "renderers/report/ops_json.hpp"

#include "renderers/json_writer.hpp"

namespace stepscope {

namespace {

double us(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

}  // namespace

void append_ops_json(const Run& run, const OpsAnalysis& ops, std::string& out) {
  append_json_array(out, ops.ops, [&](std::string& s, const OpStats& op) {
    JsonObject o(s);
    o.text("name", op.name).text("kind", op_row_kind_name(op.kind)).number("calls", op.calls);
    o.number("self_cpu_us", us(op.self_cpu_ns)).number("cpu_total_us", us(op.cpu_total_ns));
    o.number("self_device_us", us(op.self_device_ns)).number("device_total_us", us(op.device_total_ns));
    if (ops.grouped_by_input_shapes) o.text("input_shapes", run.strings.get(op.input_shapes));
  });
}

}  // namespace stepscope
