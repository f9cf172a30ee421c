// `monitor --format csv`: a header row, then one row per sample, like the
// logs of `nvidia-smi --format=csv -l 1` and `iostat -x 1` in one.
//
// Columns are fixed by the first sample (its disks, interfaces and GPUs) and
// never change afterwards, so the file stays rectangular: a device that
// disappears leaves empty cells, one that appears later is not added. The
// process tree is summed into `tree_*` columns; per-process rows are jsonl's.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "collectors/sysmon/sysmon.hpp"

namespace stepscope {

class MonitorCsv {
 public:
  explicit MonitorCsv(bool with_tree) : with_tree_(with_tree) {}

  // The row of `sample`, preceded by the header row on the first call.
  std::string rows(const SysmonSample& sample);

 private:
  using Cells = std::vector<std::pair<std::string, std::string>>;
  Cells cells(const SysmonSample& sample) const;

  bool with_tree_;
  std::vector<std::string> columns_;  // fixed by the first sample
};

}  // namespace stepscope
