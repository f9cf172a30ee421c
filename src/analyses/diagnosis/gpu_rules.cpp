// The device side, read from the GPU analyses of the run (analyses/device/gpu.hpp,
// HTA's definitions), never recomputed here: a device that idles (gpu_idle),
// or idles waiting for the host to launch many kernels shorter than their
// launches (host_launch_bound); communication that computation does not hide
// (communication_not_overlapped); copies from pageable memory or in many
// small pieces (pageable_memcpy, small_memcpy). Shares are of the device's
// span (first activity to last), the window the GPU analyses measure; but
// the device's idle time in a recorded run is measured over its steady steps
// (steady_device_idle).
#include <fmt/format.h>

#include "analyses/diagnosis/rules.hpp"

namespace stepscope {

namespace {

double ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }
double us(double ns) { return ns / 1e3; }
double ratio(double part, double whole) { return whole > 0 ? part / whole : 0; }

// The rank, when it has enough device activity to say something.
const GpuRank* device_rank(const DiagnosisInput& in) {
  if (!in.gpu || in.gpu->temporal.span_ns <= 0 || in.gpu->events < kMinDeviceEvents) return nullptr;
  return in.gpu;
}

struct IdleCauses {
  int64_t host_wait = 0, kernel_wait = 0, other = 0;
  int64_t total() const { return host_wait + kernel_wait + other; }
};

// Summed over streams: two streams idle at once count twice, so only the
// causes' proportions are read from it, never a share of the span.
IdleCauses idle_causes(const GpuRank& rank) {
  IdleCauses out;
  for (const StreamIdle& s : rank.idle_by_stream) {
    out.host_wait += s.host_wait_ns;
    out.kernel_wait += s.kernel_wait_ns;
    out.other += s.other_ns;
  }
  return out;
}

std::string window_text(const GpuRank& rank) {
  std::string text = fmt::format("{:.1f} ms from the device's first activity to its last", ms(rank.temporal.span_ns));
  if (rank.step_mean_ns && rank.profiler_steps >= 2) {
    text += fmt::format(" ({} profiler steps of {:.1f} ms on average)", rank.profiler_steps, *rank.step_mean_ns / 1e6);
  }
  return text;
}

// How much of the window the device idles, and how much of that idle time
// the host spent waiting for data (input_bound's, not a launch problem).
struct WindowIdle {
  int64_t length_ns = 0, idle_ns = 0, data_wait_ns = 0;
  bool steady_steps = false;  // else the device's span
  std::string text;
  double share() const { return ratio(static_cast<double>(idle_ns - data_wait_ns), static_cast<double>(length_ns)); }
};

WindowIdle span_idle(const GpuRank& rank) {
  return {rank.temporal.span_ns, rank.temporal.idle_ns, 0, false, window_text(rank)};
}

// A recorded run holds the whole program, start-up included (on the GPU
// example, 4.4 s of a 5.3 s device span come before the first step), so over
// the device's span nearly any recorded GPU program idles ~100%. There the
// window is the steady steps, and idle time during the main thread's data
// waits is left to input_bound (the same waits its samples are counted in). Traces keep the span: the profiler's window
// is steps already, and HTA measures it so.
std::optional<WindowIdle> steady_device_idle(const DiagnosisInput& in, const DiagnosisFacts& f) {
  if (in.steps.origin != StepsOrigin::kHooks || !f.primary || f.window_end_ns <= f.window_start_ns) return std::nullopt;
  Intervals busy = clip_disjoint(f.device_busy, f.window_start_ns, f.window_end_ns);
  Intervals waits = clip_disjoint(merge_unsorted(f.main_data_waits), f.window_start_ns, f.window_end_ns);
  WindowIdle w;
  w.length_ns = f.window_end_ns - f.window_start_ns;
  w.idle_ns = w.length_ns - total_length(busy);
  w.data_wait_ns = total_length(waits) - overlap_length(waits, busy);
  w.steady_steps = true;
  w.text = fmt::format("{:.1f} ms of steady steps", ms(w.length_ns));
  return w;
}

// The host-device copies, summed over the two directions.
struct CopyTotals {
  size_t copies = 0, pageable = 0, small = 0;
  int64_t copy_ns = 0, pageable_ns = 0, small_ns = 0;
  std::string pageable_directions, small_directions;  // "HtoD 16", ...
};

CopyTotals copy_totals(const GpuRank& rank) {
  CopyTotals t;
  auto append = [](std::string& text, const MemcpyDirection& d, size_t count) {
    if (count == 0) return;
    text += fmt::format("{}{} {}", text.empty() ? "" : ", ", d.direction, count);
  };
  for (const MemcpyDirection& d : rank.memcpy.directions) {
    // Host-device copies only: copies within the device have no host side to
    // pin, and many small ones are a kernel's business (torch.cat, views).
    if (d.direction != "HtoD" && d.direction != "DtoH") continue;
    t.copies += d.count;
    t.copy_ns += d.total_ns;
    t.pageable += d.pageable;
    t.pageable_ns += d.pageable_ns;
    t.small += d.small;
    t.small_ns += d.small_ns;
    append(t.pageable_directions, d, d.pageable);
    append(t.small_directions, d, d.small);
  }
  return t;
}

}  // namespace

std::optional<Finding> gpu_utilization_rule(const DiagnosisInput& in, const DiagnosisFacts& facts) {
  const GpuRank* r = device_rank(in);
  if (!r) return std::nullopt;
  const GpuTemporal& t = r->temporal;
  WindowIdle window = steady_device_idle(in, facts).value_or(span_idle(*r));
  double share = window.share();
  if (share < kGpuIdleShare) return std::nullopt;
  IdleCauses causes = idle_causes(*r);
  double host_wait = ratio(static_cast<double>(causes.host_wait), static_cast<double>(causes.total()));
  double tiny = ratio(static_cast<double>(r->launch.tiny), static_cast<double>(r->launch.launches));
  bool launch_bound = r->launch.launches >= kMinLaunches && tiny >= kTinyLaunchShare && host_wait >= kHostWaitOfIdle;

  Finding out = time_finding(launch_bound ? "host_launch_bound" : "gpu_idle", share);
  if (!window.steady_steps) {
    out.evidence.push_back(fmt::format("the device idles {} of the {}: busy {:.1f} ms, computing {:.1f} ms",
                                       percent_text(share), window.text, ms(t.busy_ns), ms(t.compute_ns)));
  } else {
    double idle = ratio(static_cast<double>(window.idle_ns), static_cast<double>(window.length_ns));
    double waiting = ratio(static_cast<double>(window.data_wait_ns), static_cast<double>(window.length_ns));
    out.evidence.push_back(window.data_wait_ns > 0
                               ? fmt::format("the device idles {} of the {}, {} while the host waited for data "
                                             "(see input_bound): {} is left",
                                             percent_text(idle), window.text, percent_text(waiting), percent_text(share))
                               : fmt::format("the device idles {} of the {}", percent_text(share), window.text));
    out.evidence.push_back(fmt::format("over the whole run, {}: busy {:.1f} ms, computing {:.1f} ms", window_text(*r),
                                       ms(t.busy_ns), ms(t.compute_ns)));
  }
  if (causes.total() > 0) {
    auto part = [&](int64_t ns) { return percent_text(ratio(static_cast<double>(ns), static_cast<double>(causes.total()))); };
    out.evidence.push_back(fmt::format(
        "its streams' idle time by cause: waiting for the host to launch {}, between back-to-back kernels {}, "
        "other (synchronizations, other streams) {}",
        part(causes.host_wait), part(causes.kernel_wait), part(causes.other)));
  }
  if (r->launch.launches > 0) {
    out.evidence.push_back(fmt::format(
        "{} of {} launches ({}) ran shorter on the device than their launch call on the host; device time per "
        "launch p50 {:.1f} us, launch call p50 {:.1f} us, launch delay p50 {:.1f} us",
        r->launch.tiny, r->launch.launches, percent_text(tiny), us(static_cast<double>(r->launch.device_duration.p50_ns)),
        us(static_cast<double>(r->launch.cpu_duration.p50_ns)), us(static_cast<double>(r->launch.launch_delay.p50_ns))));
  }
  if (launch_bound) {
    out.title = fmt::format("Host-launch-bound: the device idles {} waiting for the host to launch many tiny kernels",
                            percent_text(share));
    out.recommendation =
        "Give the device more work per launch: larger batches; fewer, fused kernels (torch.compile, fused "
        "optimizers and layers); CUDA graphs (torch.compile mode=\"reduce-overhead\", torch.cuda.graphs) to "
        "replay a step's launches at once; move Python work out of the step.";
    return out;
  }
  out.title = fmt::format("Low device utilization: the device idles {} of the {}", percent_text(share),
                          window.steady_steps ? "steady steps" : "traced time");
  out.recommendation =
      causes.other > causes.host_wait + causes.kernel_wait
          ? "The device mostly waits on synchronizations and other streams: remove .item(), .cpu() and explicit "
            "synchronize() calls from the step, and overlap copies and communication with compute (see the other "
            "findings)."
          : "The host does not give the device work fast enough: look at what the host does between launches "
            "(the input pipeline, Python code, synchronizations; see the other findings), and give the device more "
            "work per step (larger batches).";
  return out;
}

std::optional<Finding> communication_not_overlapped_rule(const DiagnosisInput& in, const DiagnosisFacts&) {
  const GpuRank* r = device_rank(in);
  if (!r || r->temporal.communication_ns <= 0 || !r->temporal.comm_comp_overlap) return std::nullopt;
  double hidden = *r->temporal.comm_comp_overlap;
  double exposed_ns = static_cast<double>(r->temporal.communication_ns) * (1 - hidden);
  double share = ratio(exposed_ns, static_cast<double>(r->temporal.span_ns));
  if (share < kExposedCommShare) return std::nullopt;
  Finding out = time_finding("communication_not_overlapped", share);
  out.title = fmt::format("Communication not overlapped: {} of the traced time runs collectives with no computation",
                          percent_text(share));
  out.evidence.push_back(fmt::format(
      "communication kernels run {:.1f} ms of the {}; computation runs during {} of it, leaving {:.1f} ms exposed",
      ms(r->temporal.communication_ns), window_text(*r), percent_text(hidden), exposed_ns / 1e6));
  const auto& comm = r->kernels.by_class[static_cast<size_t>(KernelClass::kCommunication)];
  if (comm.count > 0) {
    out.evidence.push_back(fmt::format("{} communication kernels, {:.1f} ms each on average", comm.count,
                                       comm.mean_ns() / 1e6));
  }
  out.recommendation =
      "Overlap communication with computation: with DDP, let gradients all-reduce during backward (bucket_cap_mb, "
      "no synchronization between backward and the optimizer); with FSDP, backward_prefetch and forward_prefetch; "
      "fewer, larger collectives; gradient accumulation with no_sync() to communicate less often; check the "
      "interconnect (NCCL_DEBUG=INFO) if the collectives are slow.";
  return out;
}

std::optional<Finding> pageable_memcpy_rule(const DiagnosisInput& in, const DiagnosisFacts&) {
  const GpuRank* r = device_rank(in);
  if (!r) return std::nullopt;
  CopyTotals c = copy_totals(*r);
  double of_busy = ratio(static_cast<double>(c.pageable_ns), static_cast<double>(r->temporal.busy_ns));
  if (c.pageable == 0 || of_busy < kPageableOfBusy) return std::nullopt;
  double share = ratio(static_cast<double>(c.pageable_ns), static_cast<double>(r->temporal.span_ns));
  Finding out = time_finding("pageable_memcpy", share);
  out.title = fmt::format("Copies from pageable memory: {} of the device's busy time, synchronous with the host",
                          percent_text(of_busy));
  out.evidence.push_back(fmt::format("{} of {} copies ({}) are from or to pageable host memory: {:.1f} ms, {} of the {}",
                                     c.pageable, c.copies, c.pageable_directions, ms(c.pageable_ns), percent_text(share),
                                     window_text(*r)));
  for (const MemcpyDirection& d : r->memcpy.directions) {
    if (d.pageable == 0) continue;
    if (auto bw = d.bandwidth_gbps()) {
      out.evidence.push_back(fmt::format("{} copies reach {:.1f} GB/s ({} bytes in {:.1f} ms)", d.direction, *bw, d.bytes,
                                         ms(d.timed_bytes_ns)));
    }
  }
  out.recommendation =
      "Copy from pinned memory: DataLoader(pin_memory=True), or tensor.pin_memory() once for buffers reused each "
      "step, then .to(device, non_blocking=True) so the copy overlaps computation instead of blocking the host "
      "while the driver stages it.";
  return out;
}

// The steps the GPU analyses' copies came from: the profiler steps they kept
// (the last is left out when cut short), or a recorded run's steps; 0 when
// unknown.
size_t copy_steps(const DiagnosisInput& in, const DiagnosisFacts& f, const GpuRank& r) {
  if (r.profiler_steps >= 1) return r.complete_steps_only ? r.profiler_steps - 1 : r.profiler_steps;
  if (in.steps.origin == StepsOrigin::kHooks && f.primary) return f.primary->steps.size();
  return 0;
}

std::optional<Finding> small_memcpy_rule(const DiagnosisInput& in, const DiagnosisFacts& facts) {
  const GpuRank* r = device_rank(in);
  if (!r) return std::nullopt;
  CopyTotals c = copy_totals(*r);
  double of_copies = ratio(static_cast<double>(c.small), static_cast<double>(c.copies));
  if (c.small < kMinSmallCopies || of_copies < kSmallCopiesOfCopies) return std::nullopt;
  // Every step moves its inputs and targets, and often reads back a loss: a
  // few small copies a step are the minimum of any loop, not pieces.
  size_t steps = copy_steps(in, facts, *r);
  if (steps > 0 && c.small < kMinSmallCopiesPerStep * steps) return std::nullopt;
  double share = ratio(static_cast<double>(c.small_ns), static_cast<double>(r->temporal.span_ns));
  Finding out = time_finding("small_memcpy", share);
  out.title = fmt::format("Many small copies: {} host-device copies under {} KiB", c.small, kSmallMemcpyBytes / 1024);
  out.evidence.push_back(fmt::format(
      "{} of {} copies ({}; {}) move under {} KiB each; they take {:.1f} ms on the device, {} of the {}, and each "
      "costs a launch on the host",
      c.small, c.copies, percent_text(of_copies), c.small_directions, kSmallMemcpyBytes / 1024, ms(c.small_ns),
      percent_text(share), window_text(*r)));
  if (steps >= 1) {
    out.evidence.push_back(fmt::format("{:.0f} small copies per {}step", static_cast<double>(c.small) / static_cast<double>(steps),
                                       r->profiler_steps >= 1 ? "profiler " : ""));
  }
  out.recommendation =
      "Batch the copies: collate a batch into a few large tensors (one copy each) rather than many small ones; "
      "keep per-step scalars (losses, metrics) on the device and read them every N steps; copy from pinned memory "
      "with non_blocking=True.";
  return out;
}

}  // namespace stepscope
