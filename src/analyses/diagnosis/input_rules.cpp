// The input pipeline: the step waits for the DataLoader. Why it waits picks
// the finding: too few loaders while cores idle (input_bound), loaders that
// already use every core (dataloader_workers_saturated), or loaders blocked
// on storage (io_bound_workers).
#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "analyses/diagnosis/rules.hpp"

namespace stepscope {

namespace {

double data_wait_share(const DiagnosisFacts& f) {
  return f.primary->phase_fractions[static_cast<size_t>(StepPhase::kDataWait)];
}

std::string wait_evidence(const DiagnosisFacts& f, double share) {
  size_t steady = f.primary->steps.size() - f.primary->warmup_steps;
  return fmt::format("{} of steady step time waits for the next batch ({:.1f} ms of a mean {:.1f} ms step, {} steps)",
                     percent_text(share), share * f.primary->step_time.mean_ms, f.primary->step_time.mean_ms,
                     steady);
}

// Where the main process spends its data waits (the steps analysis's
// attribution): with no workers, the Dataset's own code.
std::optional<std::string> wait_functions_evidence(const DiagnosisInput& in) {
  const StepSampleAttribution& a = in.steps.attribution();
  if (a.data_wait_functions.empty() || a.data_wait_samples == 0) return std::nullopt;
  std::string text = "while it waits, the main process runs ";
  for (size_t i = 0; i < a.data_wait_functions.size() && i < 3; ++i) {
    const FunctionSamples& fs = a.data_wait_functions[i];
    if (i > 0) text += ", ";
    text += fmt::format("{} ({}) {}", in.run.strings.get(fs.function), in.run.strings.get(fs.file),
                        percent_text(static_cast<double>(fs.samples) / static_cast<double>(a.data_wait_samples)));
  }
  return text + fmt::format(" of {} samples", a.data_wait_samples);
}

std::optional<std::string> worker_functions_evidence(const DiagnosisInput& in) {
  const StepSampleAttribution& a = in.steps.attribution();
  if (a.worker_functions.empty() || a.worker_samples == 0) return std::nullopt;
  const FunctionSamples& top = a.worker_functions.front();
  return fmt::format("the workers spend {} of their busy samples in {} ({})",
                     percent_text(static_cast<double>(top.samples) / static_cast<double>(a.worker_samples)),
                     in.run.strings.get(top.function), in.run.strings.get(top.file));
}

// A trace names the DataLoader's iterator but has no worker processes:
// _MultiProcessingDataLoaderIter means num_workers > 0, count unknown.
bool trace_loader_has_workers(const DiagnosisFacts& f) {
  return f.primary->loader_iterator.find("MultiProcessing") != std::string::npos;
}

std::string workers_evidence(const DiagnosisFacts& f) {
  if (f.worker_pids.empty() && trace_loader_has_workers(f)) {
    return "DataLoader workers: some (the trace's iterator is " + f.primary->loader_iterator +
           "; a trace does not say how many)";
  }
  if (f.worker_pids.empty()) return "DataLoader workers: none seen (num_workers=0): the main process loads every batch itself";
  std::string text = fmt::format("DataLoader workers: {} process{}", f.worker_pids.size(), f.worker_pids.size() == 1 ? "" : "es");
  if (f.worker_cpu_cores) text += fmt::format(", using {:.2f} cores in all", *f.worker_cpu_cores);
  return text;
}

std::optional<std::string> cores_evidence(const DiagnosisFacts& f) {
  if (!f.cores || !f.idle_cores) return std::nullopt;
  std::string text = fmt::format("idle cores: {:.1f} of {} on average during steady steps", *f.idle_cores, *f.cores);
  if (f.tree_cpu_cores) text += fmt::format("; this job used {:.1f} cores", *f.tree_cpu_cores);
  return text;
}

// The loaders' share of busy time in disk wait: the workers', or the main
// process's data waits when it loads batches itself.
std::optional<double> disk_wait_share(const DiagnosisFacts& f) {
  uint64_t busy = f.worker_pids.empty() ? f.data_wait_samples : f.worker_busy_samples;
  uint64_t disk = f.worker_pids.empty() ? f.data_wait_disk_samples : f.worker_disk_samples;
  if (busy < kMinRuleSamples) return std::nullopt;
  return static_cast<double>(disk) / static_cast<double>(busy);
}

const DiskUse* busiest_disk(const DiagnosisFacts& f) {
  auto it = std::max_element(f.disks.begin(), f.disks.end(),
                             [](const DiskUse& a, const DiskUse& b) { return a.max_util_percent < b.max_util_percent; });
  return it == f.disks.end() ? nullptr : &*it;
}

bool io_bound(const DiagnosisFacts& f) {
  auto disk_share = disk_wait_share(f);
  if (disk_share && *disk_share >= kDiskWaitShare) return true;
  const DiskUse* disk = busiest_disk(f);
  return disk && disk->max_util_percent >= kDiskUtilSaturated && disk_share && *disk_share > 0;
}

void add_io_evidence(const DiagnosisFacts& f, std::vector<std::string>& evidence) {
  if (auto share = disk_wait_share(f)) {
    evidence.push_back(fmt::format("{} of the loaders' busy samples are in disk wait (D state)", percent_text(*share)));
  }
  if (const DiskUse* disk = busiest_disk(f)) {
    evidence.push_back(fmt::format("busiest disk {}: {:.0f}% utilized on average, {:.0f}% at peak", disk->name,
                                   disk->mean_util_percent, disk->max_util_percent));
  }
}

// Loading in parallel cannot use more CPU than the machine has: the step
// can get at most cores / (cores the job keeps busy) faster, whatever the
// data wait. The job's own use, not the whole system's, so other load on a
// shared machine does not hide the bound the job would have to itself.
double cpu_bound_speedup(const DiagnosisFacts& f, double share) {
  double bound = amdahl_speedup(share);
  if (!f.cores) return bound;
  std::optional<double> busy = f.tree_cpu_cores;
  if (!busy && f.idle_cores) busy = static_cast<double>(*f.cores) - *f.idle_cores;
  if (!busy) return bound;
  return std::max(1.0, std::min(bound, static_cast<double>(*f.cores) / std::max(0.05, *busy)));
}

Finding input_bound(const DiagnosisFacts& f, double share, bool io) {
  Finding out;
  out.id = "input_bound";
  out.title = fmt::format("Input-bound: {} of each step waits for the DataLoader", percent_text(share));
  out.expected_speedup = io ? amdahl_speedup(share) : cpu_bound_speedup(f, share);
  size_t workers = f.worker_pids.size();
  size_t idle = f.idle_cores ? static_cast<size_t>(std::lround(*f.idle_cores)) : 0;
  std::string more = workers == 0 && trace_loader_has_workers(f)
                         ? std::string("Raise num_workers and set persistent_workers=True")
                     : workers == 0 ? fmt::format("Set DataLoader(num_workers={}, persistent_workers=True)", std::max<size_t>(1, idle))
                                  : fmt::format("Raise num_workers from {} to about {} and set persistent_workers=True",
                                                workers, workers + std::max<size_t>(1, idle));
  out.recommendation =
      more + " so batches load in parallel with the step; pin_memory=True when training on a GPU; "
             "raise prefetch_factor if waits remain. Then make each item cheaper: move work out of "
             "__getitem__ (pre-tokenize or pre-decode once, cache), and pack many small files into "
             "shards (tar/WebDataset, LMDB, Parquet).";
  return out;
}

// More workers cannot add parallelism when no core is idle beside them, nor
// when there are already as many workers as cores (the idle share then is
// the workers' own stalls, which more processes would not fill).
bool workers_fill_cores(const DiagnosisFacts& f) {
  bool none_idle = f.idle_cores && *f.idle_cores < kIdleCoresSaturated;
  bool one_per_core = f.cores && f.worker_pids.size() >= *f.cores;
  return none_idle || one_per_core;
}

Finding workers_saturated(const DiagnosisFacts& f, double share) {
  Finding out = time_finding(
      "dataloader_workers_saturated", share,
      fmt::format("DataLoader workers already use the machine's cores: {} of each step waits for them",
                  percent_text(share)));
  out.recommendation =
      fmt::format("The {} worker{} already take every core (none idle, or as many workers as cores), so more "
                  "workers will not help. Make each item "
                  "cheaper: pre-process once offline (tokenize, decode, resize) and cache the result, vectorize "
                  "__getitem__ or fetch whole batches with a batch sampler, move augmentation to the GPU; "
                  "or run where the job has more cores to itself.",
                  f.worker_pids.size(), f.worker_pids.size() == 1 ? "" : "s");
  return out;
}

Finding io_bound_workers(const DiagnosisFacts& f, double share) {
  Finding out = time_finding(
      "io_bound_workers", share,
      fmt::format("DataLoader workers wait on storage: {} of each step waits for data", percent_text(share)));
  out.recommendation = fmt::format(
      "The {} workers are blocked on reads. Pack many small files into large sequential shards "
      "(tar/WebDataset, LMDB, Parquet), put the data set on local NVMe or in the page cache, and "
      "keep more reads in flight (more workers, higher prefetch_factor).",
      f.worker_pids.size());
  return out;
}

}  // namespace

std::optional<Finding> input_pipeline_rule(const DiagnosisInput& in, const DiagnosisFacts& f) {
  if (!f.primary) return std::nullopt;
  double share = data_wait_share(f);
  if (share < kInputBoundShare) return std::nullopt;
  bool io = io_bound(f);
  bool has_workers = !f.worker_pids.empty();
  Finding out = has_workers && io ? io_bound_workers(f, share)
                : has_workers && workers_fill_cores(f) ? workers_saturated(f, share)
                                                       : input_bound(f, share, io);
  out.share = share;
  out.severity = severity_for_speedup(*out.expected_speedup);
  out.evidence.push_back(wait_evidence(f, share));
  if (!has_workers) {
    if (auto e = wait_functions_evidence(in)) out.evidence.push_back(*e);
  } else if (auto e = worker_functions_evidence(in)) {
    out.evidence.push_back(*e);
  }
  out.evidence.push_back(workers_evidence(f));
  if (auto e = cores_evidence(f)) out.evidence.push_back(*e);
  if (io || out.id == "io_bound_workers") add_io_evidence(f, out.evidence);
  return out;
}

}  // namespace stepscope
