// Makes a long, many-rank run file out of a real recording, for the window
// benchmarks (bench/long_run.py, bench/README.md): every process of SOURCE
// is copied once per rank, under pids shifted by rank * 1,000,000, and the
// recording is repeated end to end until HOURS have passed, committed as a
// recorder commits (a repetition at a time).
//
//   stepscope_long_run SOURCE.db OUT.db RANKS HOURS
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "run/run_file.hpp"
#include "run/run_window.hpp"

namespace {

using namespace stepscope;

constexpr int64_t kPidsPerRank = 1'000'000;
constexpr double kNsPerHour = 3600e9;

struct Shift {
  int64_t ns = 0;
  int64_t pid = 0;
};

int64_t shifted_pid(int64_t pid, const Shift& shift) { return pid == 0 ? 0 : pid + shift.pid; }

// The source's processes, threads, counter tracks and per-process metadata, once per rank.
void add_ranks(const Run& source, int ranks, Run& out) {
  for (int rank = 0; rank < ranks; ++rank) {
    Shift shift{0, rank * kPidsPerRank};
    for (Process p : source.processes) {
      p.pid = shifted_pid(p.pid, shift);
      p.parent_pid = shifted_pid(p.parent_pid, shift);
      out.processes.push_back(p);
    }
    for (Thread t : source.threads) {
      t.pid = shifted_pid(t.pid, shift);
      t.tid = shifted_pid(t.tid, shift);
      out.threads.push_back(t);
    }
    for (CounterTrack track : source.counter_tracks) {
      track.pid = shifted_pid(track.pid, shift);
      out.counter_tracks.push_back(track);  // system-wide tracks too: one per rank, as one per node
    }
    for (const Process& p : source.processes) {
      std::string prefix = "hooks." + std::to_string(p.pid) + ".";
      for (const auto& [key, value] : source.metadata) {
        if (key.starts_with(prefix)) {
          out.metadata["hooks." + std::to_string(p.pid + shift.pid) + "." + key.substr(prefix.size())] = value;
        }
      }
      out.metadata["hooks." + std::to_string(p.pid + shift.pid) + ".rank"] = std::to_string(rank);
      out.metadata["hooks." + std::to_string(p.pid + shift.pid) + ".world_size"] = std::to_string(ranks);
    }
  }
}

// One repetition of every rank's recording, `shift.ns` later than the source.
void append_repetition(const Run& source, int ranks, int64_t shift_ns, Run& out) {
  const size_t tracks = source.counter_tracks.size();
  for (int rank = 0; rank < ranks; ++rank) {
    Shift shift{shift_ns, rank * kPidsPerRank};
    for (Sample s : source.samples) {
      s.ts_ns += shift.ns;
      s.pid = static_cast<int32_t>(shifted_pid(s.pid, shift));  // ranks x kPidsPerRank: far below 2^31
      s.tid = static_cast<int32_t>(shifted_pid(s.tid, shift));
      out.samples.push_back(s);
    }
    const auto first_span = static_cast<SpanId>(out.spans.size());
    for (Span s : source.spans) {
      s.start_ns += shift.ns;
      s.end_ns += shift.ns;
      s.pid = shifted_pid(s.pid, shift);
      s.tid = shifted_pid(s.tid, shift);
      out.spans.push_back(s);
    }
    for (Flow f : source.flows) {
      f.from += first_span;
      f.to += first_span;
      out.flows.push_back(f);
    }
    for (CounterValue v : source.counter_values) {
      v.ts_ns += shift.ns;
      v.track += static_cast<CounterTrackId>(rank * tracks);
      out.counter_values.push_back(v);
    }
  }
}

int make_long_run(const std::string& source_path, const std::string& out_path, int ranks, double hours) {
  Run source = load_run(source_path);
  std::optional<TimeRange> extent = run_extent(source);
  if (!extent || extent->to_ns <= extent->from_ns) {
    std::fprintf(stderr, "%s holds nothing to repeat\n", source_path.c_str());
    return 2;
  }
  const int64_t length = extent->to_ns - extent->from_ns + 1;
  // Its strings, frames, stacks and metadata as they are (they are not copyable): the rest goes.
  Run out = load_run(source_path);
  out.processes.clear();
  out.threads.clear();
  out.samples.clear();
  out.spans.clear();
  out.flows.clear();
  out.counter_tracks.clear();
  out.counter_values.clear();
  add_ranks(source, ranks, out);
  RunWriter writer(out_path);
  const auto repetitions = static_cast<int64_t>(hours * kNsPerHour / static_cast<double>(length)) + 1;
  for (int64_t k = 0; k < repetitions; ++k) {
    append_repetition(source, ranks, k * length, out);
    writer.commit(out);
    writer.release_written(out);  // as a recorder does: a day's samples would not fit in memory
  }
  std::printf("%s: %d ranks, %lld repetitions of %.1f s, %zu samples, %zu spans, %zu counter values\n",
              out_path.c_str(), ranks, static_cast<long long>(repetitions), static_cast<double>(length) / 1e9,
              out.samples_dropped + out.samples.size(), out.spans.size(),
              out.counter_values_dropped + out.counter_values.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s SOURCE.db OUT.db RANKS HOURS\n", argv[0]);
    return 2;
  }
  try {
    return make_long_run(argv[1], argv[2], std::atoi(argv[3]), std::atof(argv[4]));
  } catch (const std::exception& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 2;
  }
}
