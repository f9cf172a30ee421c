// The latest value of the counters record's monitor takes (process memory and
// CPU, GPU utilization and memory), for a recording still in progress: what
// `record --metrics` publishes beside the steps. Like LiveSteps, it reads only
// what was appended since the last update.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "run/run.hpp"

namespace stepscope {

struct LiveGauges {
  std::map<int64_t, double> process_rss_bytes;        // by pid
  std::map<int64_t, double> process_cpu_ratio;        // by pid: CPU seconds per second (1: one core busy)
  std::map<int, double> gpu_utilization_ratio;        // by GPU index
  std::map<int, double> gpu_memory_used_bytes;
};

class LiveCounters {
 public:
  void update(const Run& run);
  const LiveGauges& gauges() const { return gauges_; }

 private:
  size_t next_value_ = 0;  // the run's number of the next value to read (Run::counter_values_dropped)
  LiveGauges gauges_;
};

}  // namespace stepscope
