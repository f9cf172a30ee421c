"""The copy and memory rules against numbers counted from the raw input.

  check_copy_memory_rules.py STEPSCOPE KINETO_DIR CAPTURED_DIR WORK

For every real trace (the testdata's, and the torch.profiler traces captured on
an H200 in CAPTURED_DIR) and every recorded run captured there (RUN.db.gz,
`record --gpu on|off`), counts the host-device copies, the small ones
(< 64 KiB) and the steps they came from, the time of pageable copies against
the device's busy time, and the device memory's peak against its capacity,
straight from the trace's JSON or the run's SQLite tables; then requires small_memcpy, pageable_memcpy and
memory_pressure to fire in `report --json` exactly where those numbers cross
the rules' lines (docs/diagnosis.md), and where EXPECTED says (checked by
hand). No input sits near a line: each is far from it or fails one condition
outright (trace_diff's 49 %).
"""
import glob, gzip, json, os, shutil, subprocess, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from run_samples import open_with_samples  # noqa: E402

SMALL, MIN_SMALL, SMALL_OF_COPIES, PAGEABLE_OF_BUSY, MIN_EVENTS, DEVICE_PEAK = 65536, 100, 0.5, 0.10, 10, 0.90
MIN_SMALL_PER_STEP = 10
RULES = {"small_memcpy", "pageable_memcpy", "memory_pressure"}
EXPECTED = {
    "critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz": {"pageable_memcpy"},
    "critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz": {"pageable_memcpy"},
    "critical_path/end_to_end/simple_add/input/trace.json.gz": {"pageable_memcpy"},
    "critical_path/end_to_end/simple_add/output/overlaid_critical_path_trace.json.gz": {"pageable_memcpy"},
    # Captured on an H200 (torch 2.11, CUDA 13; scripts/gpu_check/capture_testdata.sh):
    # 80 pageable copies of 1 KiB a step; the same data in one pinned copy each way;
    # 93 % and 30 % of the GPU's memory held; a small training loop.
    "gpu/small-copies.trace.json.gz": {"small_memcpy", "pageable_memcpy"},
    "gpu/batched-copies.trace.json.gz": set(),
    "gpu/memory-93.trace.json.gz": {"memory_pressure"},
    "gpu/memory-30.trace.json.gz": set(),
    "gpu/small-copies.db.gz": {"small_memcpy", "pageable_memcpy"},
    "gpu/memory-93.db.gz": {"memory_pressure"},
    "gpu/torch-loop.db.gz": set(),
    # examples/train_lm.py on CUDA: 207 small copies, but 3.5 a step (inputs, targets, the loss).
    "gpu/example-w0.db.gz": set(),
    "gpu/example-w2.db.gz": set(),
}


def merged_length(intervals):
    total, end = 0.0, float("-inf")
    for s, e in sorted(intervals):
        if e > end:
            total += e - max(s, end)
            end = e
    return total


def numbers(device, copies, memory_peak, steps):
    """device: (start, end) of every kernel, copy and memset; copies: (direction
    text, bytes or None, duration) of every copy; steps: how many steps the
    copies came from (0: unknown)."""
    hd = [c for c in copies if "HtoD" in c[0] or "DtoH" in c[0]]
    small = sum(1 for c in hd if (SMALL if c[1] is None else c[1]) < SMALL)
    pageable = sum(c[2] for c in copies if "Pageable" in c[0])
    busy = merged_length(device)
    return {"device_events": len(device), "hd": len(hd), "small": small, "steps": steps,
            "pageable_of_busy": pageable / busy if busy else 0, "memory_peak": memory_peak}


def trace_numbers(path):
    trace = json.load(gzip.open(path, "rt") if path.endswith(".gz") else open(path))
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    device, copies, peaks = [], [], {}
    for e in events:
        if not isinstance(e, dict):
            continue
        if e.get("name") == "[memory]" and e.get("args", {}).get("Device Type") == 1:
            a = e["args"]
            peak = peaks.setdefault(a["Device Id"], [0, 0])
            peak[0], peak[1] = max(peak[0], a["Total Allocated"]), max(peak[1], a["Total Reserved"])
        if e.get("ph") != "X" or e.get("cat") not in ("kernel", "gpu_memcpy", "gpu_memset"):
            continue
        start, dur = float(e["ts"]), float(e.get("dur", 0))
        device.append((start, start + dur))
        if e["cat"] == "gpu_memcpy":
            copies.append((e.get("name", ""), e.get("args", {}).get("bytes"), dur))
    capacity = {p["id"]: p.get("totalGlobalMem") for p in trace.get("deviceProperties", [])} if isinstance(trace, dict) else {}
    # Distinct ProfilerStep#N ranges on the host; with two or more the last is cut short.
    profiler_steps = len({e["name"] for e in events if isinstance(e, dict) and e.get("ph") == "X"
                          and e.get("cat") != "gpu_user_annotation" and str(e.get("name", "")).startswith("ProfilerStep#")})
    return numbers(device, copies, max([max(p) / capacity[i] for i, p in peaks.items() if capacity.get(i)] or [0]),
                   profiler_steps - 1 if profiler_steps >= 2 else profiler_steps)


def run_numbers(path):
    """A recorded run (docs/run-format.md): span kinds 9 kernel, 10 memcpy, 11
    memset; a copy's direction and memory kind in its detail (`HtoD Pageable`);
    NVML's gpu.I.memory_used_bytes against gpu.I.memory_total_bytes."""
    db = open_with_samples(path)  # counter values are kept in blocks
    device = db.execute("SELECT start_ns, end_ns FROM spans WHERE kind IN (9, 10, 11)").fetchall()
    copies = db.execute("""SELECT s.value, NULLIF(bytes, 0), end_ns - start_ns FROM spans
                           JOIN strings s ON s.id = spans.detail WHERE kind = 10""").fetchall()
    peak = dict(db.execute("""SELECT s.value, MAX(v.value) FROM counter_tracks t JOIN strings s ON s.id = t.name
                              JOIN counter_values v ON v.track = t.id
                              WHERE s.value LIKE 'gpu.%.memory_%_bytes' GROUP BY s.value""").fetchall())
    shares = [peak[name] / peak[name.replace("used", "total")] for name in peak
              if name.endswith("used_bytes") and peak.get(name.replace("used", "total"))]
    steps = db.execute("SELECT count(*) FROM spans WHERE kind = 1").fetchone()[0]
    return numbers(device, copies, max(shares or [0]), steps)


def raw_rules(n):
    fired = set()
    if (n["device_events"] >= MIN_EVENTS and n["small"] >= MIN_SMALL and n["small"] >= SMALL_OF_COPIES * n["hd"]
            and n["small"] >= MIN_SMALL_PER_STEP * n["steps"]):
        fired.add("small_memcpy")
    if n["device_events"] >= MIN_EVENTS and n["pageable_of_busy"] >= PAGEABLE_OF_BUSY:
        fired.add("pageable_memcpy")
    if n["memory_peak"] >= DEVICE_PEAK:
        fired.add("memory_pressure")
    return fired


def inputs_under(root, pattern, prefix=""):
    return {prefix + os.path.relpath(p, root): p for p in glob.glob(f"{root}/**/{pattern}", recursive=True)}


def main():
    stepscope, kineto, captured, work = sys.argv[1:5]
    testdata = inputs_under(kineto, "*.json*")
    traces = inputs_under(captured, "*.trace.json.gz", "gpu/")
    runs = inputs_under(captured, "*.db.gz", "gpu/")
    assert len(testdata) >= 20 and len(traces) >= 4 and len(runs) >= 3, (sorted(testdata), sorted(traces), sorted(runs))
    problems = []
    for name, path in sorted({**testdata, **traces, **runs}.items()):
        if name in runs:  # `report` reads a run file, not a compressed one
            with gzip.open(path) as packed, open(f"{work}/run.db", "wb") as plain:
                shutil.copyfileobj(packed, plain)
            path = f"{work}/run.db"
        n = run_numbers(path) if name in runs else trace_numbers(path)
        out = f"{work}/report.json"
        subprocess.run([stepscope, "report", path, "--json", "-o", out], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        fired = {f["id"] for f in json.load(open(out))["diagnosis"]} & RULES
        raw, want = raw_rules(n), EXPECTED.get(name, set())
        print(f"{name}: fired {sorted(fired)}, raw {sorted(raw)}, host-device copies {n['hd']} ({n['small']} small, "
              f"{n['steps']} steps), "
              f"pageable {n['pageable_of_busy']:.1%} of busy, memory peak {n['memory_peak']:.1%}")
        if fired != want or raw != want:
            problems.append(f"{name}: fired {sorted(fired)}, raw numbers say {sorted(raw)}, expected {sorted(want)}")
    assert not problems, "\n".join(problems)


main()
