#include "analyses/process_summary.hpp"

#include <map>
#include <set>
#include <utility>

namespace stepscope {

std::vector<ProcessSummary> summarize_processes(const Run& run) {
  std::vector<ProcessSummary> out;
  std::map<int64_t, size_t> index_of_pid;  // the latest process with that pid
  for (const Process& p : run.processes) {
    ProcessSummary& s = out.emplace_back();
    s.pid = p.pid;
    s.parent_pid = p.parent_pid;
    s.command = p.command;
    s.start_ns = p.start_ns;
    s.end_ns = p.end_ns;
    s.exit_status = p.exit_status;
    if (auto v = run.metadata.find("python_version." + std::to_string(p.pid)); v != run.metadata.end()) {
      s.python_version = v->second;
    }
    index_of_pid[p.pid] = out.size() - 1;
  }
  std::set<std::pair<int64_t, int64_t>> threads;
  for (const Sample& sample : run.samples) {
    auto found = index_of_pid.find(sample.pid);
    if (found == index_of_pid.end()) continue;
    ProcessSummary& s = out[found->second];
    ++s.samples;
    s.running += sample.state == ThreadState::kRunning;
    s.idle += sample.state == ThreadState::kIdle;
    s.disk_wait += sample.state == ThreadState::kDiskWait;
    if (threads.insert({sample.pid, sample.tid}).second) ++s.threads;
  }
  return out;
}

}  // namespace stepscope
