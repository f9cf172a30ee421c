#include "analyses/process_summary.hpp"

#include <cstdint>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "analyses/recent_answers.hpp"
#include "analyses/thread_key.hpp"

namespace stepscope {

namespace {

// The threads seen so far, each (pid, tid) once.
class SeenThreads {
 public:
  bool first_time(int64_t pid, int64_t tid) {
    bool first = false;
    recent_.get({pid, tid}, [&](const ThreadKey& thread) {
      first = seen_.insert(thread).second;
      return true;
    });
    return first;
  }

 private:
  std::unordered_set<ThreadKey, ThreadKeyHash> seen_;
  RecentAnswers<ThreadKey, bool, ThreadKeyHash> recent_;  // seen: a thread's samples skip the set
};

bool is_imported_trace(const Run& run) {
  auto format = run.metadata.find("source_format");
  return format != run.metadata.end() && format->second == "chrome_trace";
}

// Host spans decide; kOther does not (a trace's unknown categories, such as
// Kineto's "Trace" span on its "Spans" track, are kOther).
ProcessRole role_of(bool sampled, size_t host_spans, size_t device_spans, bool trace) {
  if (sampled || host_spans > 0) return ProcessRole::kHost;
  if (device_spans > 0) return ProcessRole::kDevice;
  return trace ? ProcessRole::kTraceTrack : ProcessRole::kHost;
}

}  // namespace

const char* process_role_name(ProcessRole role) {
  switch (role) {
    case ProcessRole::kDevice:
      return "device";
    case ProcessRole::kTraceTrack:
      return "trace_track";
    case ProcessRole::kHost:
      break;
  }
  return "host";
}

std::vector<ProcessSummary> summarize_processes(const Run& run) { return summarize_processes(run, SpanCensus(run)); }

std::vector<ProcessSummary> summarize_processes(const Run& run, const SpanCensus& census) {
  std::vector<ProcessSummary> out;
  std::unordered_map<int64_t, size_t> index_of_pid;  // the latest process with that pid
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
  SeenThreads threads;
  RecentAnswers<int64_t, size_t> index_of_sampled;
  auto index_of = [&](int64_t pid) {
    auto found = index_of_pid.find(pid);
    return found == index_of_pid.end() ? SIZE_MAX : found->second;
  };
  for (const Sample& sample : run.samples) {
    size_t index = index_of_sampled.get(sample.pid, index_of);
    if (index == SIZE_MAX) continue;
    ProcessSummary& s = out[index];
    ++s.samples;
    s.running += sample.state == ThreadState::kRunning;
    s.idle += sample.state == ThreadState::kIdle;
    s.disk_wait += sample.state == ThreadState::kDiskWait;
    s.threads += threads.first_time(sample.pid, sample.tid);
  }
  std::map<int64_t, std::pair<size_t, size_t>> host_device_spans;  // by pid
  for (const CensusTrack& track : census.tracks()) {
    auto found = index_of_pid.find(track.pid);
    if (found == index_of_pid.end()) continue;
    ProcessSummary& s = out[found->second];
    s.spans += track.spans;
    auto& [host, device] = host_device_spans[track.pid];
    host += track.host_work();
    device += track.device;
    s.threads += threads.first_time(track.pid, track.tid);
  }
  bool trace = is_imported_trace(run);
  for (ProcessSummary& s : out) {
    auto [host, device] = host_device_spans[s.pid];
    s.role = role_of(s.samples > 0, host, device, trace);
  }
  return out;
}

}  // namespace stepscope
