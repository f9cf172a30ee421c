#include "importers/memory_events.hpp"

#include <cmath>

#include <fmt/format.h>

namespace stepscope {

namespace od = simdjson::ondemand;

namespace {

// c10::DeviceType values that are not an accelerator's memory: the host's
// allocator and the shape-only "meta" device. Every other type (CUDA, which
// HIP builds report too, XPU, MTIA, HPU, PrivateUse1 backends...) is kept, so
// that no accelerator is left out by name.
constexpr int64_t kCpuDeviceType = 0;
constexpr int64_t kMetaDeviceType = 14;

bool read_number(od::value value, double& out) {
  return !value.get_double().get(out) && std::isfinite(out);
}

}  // namespace

void MemoryEventImporter::add(const EventFields& fields, int64_t pid, std::string_view text, size_t padded_size,
                              Run& run) {
  Totals totals;
  if (!read_totals(text, padded_size, totals) || !totals.device_type || !totals.device || !totals.allocated ||
      !totals.reserved || *totals.allocated < 0 || *totals.reserved < 0) {
    ++skipped_;
    return;
  }
  if (*totals.device_type == kCpuDeviceType || *totals.device_type == kMetaDeviceType || *totals.device < 0) return;
  run.counter_values.push_back({track(run, pid, *totals.device, "allocated_bytes"), *fields.ts_ns, *totals.allocated});
  run.counter_values.push_back({track(run, pid, *totals.device, "reserved_bytes"), *fields.ts_ns, *totals.reserved});
}

bool MemoryEventImporter::read_totals(std::string_view text, size_t padded_size, Totals& totals) {
  od::document document;
  od::object args;
  if (parser_.iterate(text.data(), text.size(), padded_size).get(document) ||
      document.find_field_unordered("args").get_object().get(args)) {
    return false;
  }
  for (auto field_result : args) {
    od::field field;
    std::string_view key;
    if (std::move(field_result).get(field) || field.unescaped_key().get(key)) return false;
    double number = 0;
    if (key == "Total Allocated" || key == "Total Reserved") {
      if (!read_number(field.value(), number)) return false;
      (key == "Total Allocated" ? totals.allocated : totals.reserved) = number;
    } else if (key == "Device Type" || key == "Device Id") {
      int64_t id = 0;
      if (field.value().get_int64().get(id)) return false;
      (key == "Device Type" ? totals.device_type : totals.device) = id;
    }
  }
  return true;
}

CounterTrackId MemoryEventImporter::track(Run& run, int64_t pid, int64_t device, std::string_view quantity) {
  auto [found, inserted] =
      tracks_.try_emplace({pid, device, quantity}, static_cast<CounterTrackId>(run.counter_tracks.size()));
  if (inserted) {
    StringId name = run.strings.intern(fmt::format("process.gpu.{}.{}", device, quantity));
    run.counter_tracks.push_back(CounterTrack{name, pid, run.strings.intern("bytes")});
  }
  return found->second;
}

}  // namespace stepscope
