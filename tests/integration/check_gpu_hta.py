"""Checks the "gpu" section of `stepscope report --json` for one trace
against Holistic Trace Analysis run on the same trace, and against
computations on the raw JSON written here.

usage: check_gpu_hta.py compare TRACE REPORT.json [TRACE REPORT.json ...]
       check_gpu_hta.py prepare TRACE COPY.json   (the trace as HTA reads it)

HTA runs with HTA_DISABLE_NS_ROUNDING=1, so it keeps the trace's fractional
microseconds instead of rounding each event inward to whole ones, on a copy
of the trace without the events the two tools define differently
(docs/gpu.md; see normalized()). HTA's launch statistics know only some
runtime names (cudaLaunchKernel, ...), so they are compared only when every
correlated runtime call has one of those names.
"""
import collections
import decimal
import gzip
import json
import math
import os
import sys
import tempfile

os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"

import logging  # noqa: E402

logging.disable(logging.WARNING)

from hta.trace_analysis import TraceAnalysis  # noqa: E402

HTA_LAUNCH_NAMES = {"cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync", "cudaMemsetAsync",
                    "runFunction - job_prep_and_submit_for_execution"}
DEVICE_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "mtia_ccp_events"}
failures = []


def close(name, got, want, tol_us=0.01, rel=1e-6):
    if got is None or want is None or (isinstance(want, float) and math.isnan(want)):
        if not (got is None and (want is None or (isinstance(want, float) and math.isnan(want)))):
            failures.append(f"{name}: stepscope {got}, expected {want}")
        return
    if abs(got - want) > tol_us + rel * abs(want):
        failures.append(f"{name}: stepscope {got}, expected {want}")


def normalized(path):
    """The trace as HTA should read it. Kineto writes epoch microseconds
    (1.7e15): as float64, which HTA parses them into, they are only good to
    0.25 us, and comparisons of launch and kernel times flip; subtracting the
    first timestamp in decimal keeps every digit the trace wrote. cuda_sync
    events are device waits, not activity, for stepscope; device events
    without a stream are host events for HTA: both are dropped. So are the
    device-side ProfilerStep ranges newer Kineto writes: HTA would take their
    start, later than the host's, as the last step's, and keep a few events
    the cut-short step launched (docs/gpu.md, "Complete steps")."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        trace = json.load(f, parse_float=decimal.Decimal)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    events = [e for e in events if e.get("cat") != "cuda_sync" and
              not (e.get("cat") in DEVICE_CATS and "stream" not in (e.get("args") or {})) and
              not (e.get("cat") == "gpu_user_annotation" and str(e.get("name", "")).startswith("ProfilerStep#"))]
    base = min((e["ts"] for e in events if "ts" in e), default=0)
    for e in events:
        if "ts" in e:
            e["ts"] = e["ts"] - base
    return dict(trace, traceEvents=events) if isinstance(trace, dict) else events


def write_json(trace, path):
    with open(path, "w") as f:
        json.dump(trace, f, default=float)


def check_temporal(hta, rank, ours):
    t = hta.get_temporal_breakdown(visualize=False).iloc[0]
    close("span_us", ours["span_us"], float(t["kernel_time(us)"]))
    close("idle_us", ours["idle_us"], float(t["idle_time(us)"]))
    close("compute_us", ours["compute_us"], float(t["compute_time(us)"]))
    close("non_compute_us", ours["non_compute_us"], float(t["non_compute_time(us)"]))


def independent_idle(events, kept):
    """Gaps per stream against the latest end so far (not below zero), each
    host wait, kernel wait (under 30 us) or other."""
    launch = {}
    for e in events:
        if str(e.get("cat", "")).endswith("runtime") and "correlation" in e.get("args", {}):
            launch.setdefault(e["args"]["correlation"], float(e["ts"]))
    by_stream = collections.defaultdict(list)
    for e in events:
        if e.get("cat") in DEVICE_CATS and e.get("ph") == "X":
            corr = e["args"].get("correlation")
            if kept is None or corr in kept:
                by_stream[int(e["args"]["stream"])].append((float(e["ts"]), float(e["dur"]), launch.get(corr)))
    result = {}
    for stream, items in by_stream.items():
        items.sort(key=lambda x: x[0])
        sums = {"host_wait": 0.0, "kernel_wait": 0.0, "other": 0.0}
        overlapped = False
        last_end = items[0][0] + items[0][1]
        for ts, dur, launched in items[1:]:
            gap = ts - last_end
            overlapped |= gap < 0
            if launched is not None and launched > last_end:
                sums["host_wait"] += max(gap, 0)
            elif gap < 30:
                sums["kernel_wait"] += max(gap, 0)
            else:
                sums["other"] += gap
            last_end = max(last_end, ts + dur)
        result[stream] = (sums, overlapped)
    return result


def check_idle(hta, ours, stream_of_track, independent):
    """Against HTA on streams whose activity never overlaps; HTA counts the
    negative gaps of overlapping activity as kernel wait, stepscope none."""
    df = hta.get_idle_time_breakdown(consecutive_kernel_delay=30, visualize=False)
    df = df[0] if isinstance(df, tuple) else df
    want = collections.defaultdict(float)
    for _, row in df.iterrows():
        want[(int(row["stream"]), row["idle_category"])] += float(row["idle_time"])
    categories = {"host_wait": "host_wait_us", "kernel_wait": "kernel_wait_us", "other": "other_us"}
    streams_seen = set()
    for s in ours:
        stream = stream_of_track[(s["pid"], s["stream"])]
        streams_seen.add(stream)
        sums, overlapped = independent[stream]
        for category, field in categories.items():
            close(f"stream {stream} {category} (independent)", s[field], sums[category], tol_us=0.1)
            if not overlapped:
                close(f"stream {stream} {category} (HTA)", s[field], want.get((stream, category), 0.0))
    if set(independent) != streams_seen:
        failures.append(f"streams: stepscope {sorted(streams_seen)}, trace {sorted(independent)}")


def check_kernels(hta, ours):
    _, df = hta.get_gpu_kernel_breakdown(visualize=False, duration_ratio=1.0, num_kernels=10**9,
                                         include_memory_kernels=True)
    by_short = collections.defaultdict(lambda: [0, 0.0, math.inf, -math.inf])
    for k in ours:
        if k["class"] == "other":
            continue  # HTA leaves its "OTHER" kernels out of this breakdown
        entry = by_short[(k["name"], k["class"].upper())]
        entry[0] += k["count"]
        entry[1] += k["total_us"]
        entry[2] = min(entry[2], k["min_us"])
        entry[3] = max(entry[3], k["max_us"])
    if len(df) != len(by_short):
        failures.append(f"kernel names: stepscope {len(by_short)} groups, HTA {len(df)}")
    for _, row in df.iterrows():
        key = (row["name"], row["kernel_type"])
        if key not in by_short:
            failures.append(f"kernel missing: {key}")
            continue
        count, total, low, high = by_short[key]
        close(f"{key} total", total, float(row["sum (us)"]))
        close(f"{key} min", low, float(row["min (us)"]))
        close(f"{key} max", high, float(row["max (us)"]))


def check_overlap(hta, ours):
    df = hta.get_comm_comp_overlap(visualize=False)
    value = float(df.iloc[0]["comp_comm_overlap_pctg"])
    if math.isnan(value):
        close("comm_comp_overlap", ours["comm_comp_overlap"], None)
    else:
        close("comm_comp_overlap", 100 * ours["comm_comp_overlap"], value, tol_us=0.01)


def check_launch(hta, rank, ours, runtime_names):
    if not runtime_names or not runtime_names <= HTA_LAUNCH_NAMES:
        return False
    df = list(hta.get_cuda_kernel_launch_stats(ranks=[rank], visualize=False).values())[0]
    if ours["launches"] != len(df):
        failures.append(f"launches: stepscope {ours['launches']}, HTA {len(df)}")
        return True
    close("cpu_duration mean", ours["cpu_duration"]["mean_us"], float(df["cpu_duration"].mean()))
    close("cpu_duration max", ours["cpu_duration"]["max_us"], float(df["cpu_duration"].max()))
    close("device_duration mean", ours["device_duration"]["mean_us"], float(df["gpu_duration"].mean()))
    close("launch_delay mean", ours["launch_delay"]["mean_us"], float(df["launch_delay"].mean()))
    close("launch_delay max", ours["launch_delay"]["max_us"], float(df["launch_delay"].max()))
    tiny = int((df["gpu_duration"] < df["cpu_duration"]).sum())
    if tiny != ours["tiny_kernels"]:
        failures.append(f"tiny kernels: stepscope {ours['tiny_kernels']}, HTA's frame {tiny}")
    return True


def check_memcpy(events, ours, kept_correlations):
    """Independently of HTA: counts, time and bytes per direction."""
    want = collections.defaultdict(lambda: [0, 0.0, 0])
    for e in events:
        if e.get("cat") not in ("gpu_memcpy", "gpu_memset"):
            continue
        if kept_correlations is not None and e["args"].get("correlation") not in kept_correlations:
            continue
        name = e["name"]
        direction = "memset" if e["cat"] == "gpu_memset" else (
            name[7:11] if name.startswith("Memcpy ") else "unknown")
        w = want[direction]
        w[0] += 1
        w[1] += float(e["dur"])
        w[2] += int(e["args"].get("bytes", 0))
    got = {d["direction"]: d for d in ours["directions"]} if ours else {}
    if set(got) - {"unknown"} != set(want) - {"unknown"}:
        failures.append(f"memcpy directions: stepscope {sorted(got)}, trace {sorted(want)}")
    for direction, (count, dur, size) in want.items():
        d = got.get(direction)
        if d is None:
            continue
        if d["count"] != count or d["bytes"] != size:
            failures.append(f"memcpy {direction}: stepscope {d['count']} ops {d['bytes']} B, trace {count} ops {size} B")
        close(f"memcpy {direction} time", d["total_us"], dur, tol_us=0.01 * count)
        if size and d["total_us"] > 0:
            close(f"memcpy {direction} bandwidth", d["bandwidth_gbps"], size / (dur * 1e3), tol_us=1e-6, rel=1e-3)


def check_one(trace_path, report_path):
    report = json.load(open(report_path))
    ours = report["gpu"]["ranks"][0]
    trace = normalized(trace_path)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    device = [e for e in events if e.get("cat") in DEVICE_CATS and e.get("ph") == "X"]
    if not device:
        if ours["device_events"] != 0 or ours["temporal"] is not None:
            failures.append("a trace without device activity has device figures")
        return {"device_events": 0}
    # Kineto puts each stream on its own track; the report names tracks.
    tracks = {(e["pid"], e["tid"]): int(e["args"]["stream"]) for e in device}
    with tempfile.TemporaryDirectory() as directory:
        copy = os.path.join(directory, "trace.json")
        write_json(trace, copy)
        hta = TraceAnalysis(trace_files={0: copy}, trace_dir=directory)
        kept = None
        if ours["complete_steps_only"]:
            df = hta.t.get_trace(0)
            kept = set(int(c) for c in df[df["stream"].ne(-1)]["correlation"])
        check_temporal(hta, 0, ours["temporal"])
        check_idle(hta, ours["idle_by_stream"], tracks, independent_idle(events, kept))
        check_kernels(hta, ours["kernels"])
        check_overlap(hta, ours["temporal"])
        correlations = {e["args"].get("correlation") for e in device if "correlation" in e.get("args", {})}
        runtime_names = {e["name"] for e in events
                         if str(e.get("cat", "")).endswith("runtime") and e.get("args", {}).get("correlation") in correlations}
        launch_checked = check_launch(hta, 0, ours["launch"], runtime_names)
        check_memcpy(events, ours["memcpy"], kept)
    return {"device_events": ours["device_events"], "launch_checked": launch_checked,
            "complete_steps_only": ours["complete_steps_only"]}


def main():
    if sys.argv[1] == "prepare":
        write_json(normalized(sys.argv[2]), sys.argv[3])
        return
    # Pairs of TRACE REPORT: one process, so HTA and pandas load once.
    pairs = list(zip(sys.argv[2::2], sys.argv[3::2]))
    failed = []
    for trace_path, report_path in pairs:
        failures.clear()
        summary = check_one(trace_path, report_path)
        name = os.path.basename(trace_path)
        print(f"{'FAIL' if failures else 'ok'} {name} {json.dumps(summary)}")
        failed += [f"{name}: {f}" for f in failures[:20]]
    if failed:
        print("\n".join(failed), file=sys.stderr)
        sys.exit(1)


main()
