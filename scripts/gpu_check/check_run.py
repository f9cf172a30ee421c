"""Checks a run recorded with `record --gpu on` by plain SQL, through
tools/run_samples.py, the run format's reference decoder (independently of
stepscope's C++ code):

  check_run.py RUN.db driver LAUNCHES   (driver_program.py)
  check_run.py RUN.db torch STEPS       (torch_loop.py)

Prints a JSON summary; exits 1 with the failed checks listed.
"""
import collections
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from run_samples import open_with_samples  # noqa: E402

KERNEL, MEMCPY, MEMSET, RUNTIME, SYNC, USER_RANGE = 9, 10, 11, 8, 13, 6


def main():
    path, mode, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    db = open_with_samples(path)
    strings = dict(db.execute("SELECT id, value FROM strings"))
    meta = dict(db.execute("SELECT key, value FROM metadata"))
    spans = {row[0]: row for row in db.execute(
        "SELECT id, start_ns, end_ns, pid, tid, kind, name, correlation, bytes, detail FROM spans")}
    flows = list(db.execute("SELECT from_span, to_span, kind FROM flows"))
    samples = db.execute("SELECT min(start_ns), max(end_ns) FROM sample_blocks").fetchone()
    by_kind = collections.defaultdict(list)
    for s in spans.values():
        by_kind[s[5]].append(s)
    name = lambda s: strings.get(s[6], "")
    detail = lambda s: strings.get(s[9], "")
    failures = []

    def expect(ok, what):
        if not ok:
            failures.append(what)

    expect(meta.get("gpu") == "on", f"metadata gpu is {meta.get('gpu')!r}")
    notes = {k: v for k, v in meta.items() if k.startswith("gpu.") and k.endswith(".note")}
    device_spans = [s for k in (KERNEL, MEMCPY, MEMSET, SYNC) for s in by_kind[k]]
    durations = sorted(s[2] - s[1] for s in device_spans)
    expect(all(0 <= d < 10**9 for d in durations), f"device spans outside 0..1 s: {durations[:3]}..{durations[-3:]}")
    launched = {}
    for f, t, k in flows:
        if strings.get(k) == "ac2g" and f in spans and t in spans:
            launched[t] = spans[f]
    # Work starts after its launch began, on the same clock: within 10 s, and
    # never more than 1 ms before it (CUPTI converts GPU timestamps).
    lags = [spans[t][1] - a[1] for t, a in launched.items()]
    expect(all(-10**6 <= lag < 10 * 10**9 for lag in lags), f"launch-to-work lags out of range: {sorted(lags)[:3]} {sorted(lags)[-3:]}")
    if samples[0] is not None and device_spans:
        first, last = min(s[1] for s in device_spans), max(s[2] for s in device_spans)
        expect(samples[0] - 10**9 <= first and last <= samples[1] + 10**9,
               f"device activity [{first}, {last}] outside the samples' [{samples[0]}, {samples[1]}]")
    copies = collections.Counter(detail(s) for s in by_kind[MEMCPY])

    if mode == "driver":
        kernels = [s for s in by_kind[KERNEL] if name(s) == "add_one"]
        expect(len(kernels) == count, f"{len(kernels)} add_one kernels, expected {count}")
        linked = [k for k in kernels if k[0] in launched and name(launched[k[0]]) == "cuLaunchKernel"]
        expect(len(linked) == len(kernels), f"{len(linked)} of {len(kernels)} kernels linked to a cuLaunchKernel")
        for kind in ("HtoD Pageable", "HtoD Pinned", "DtoH Pageable"):
            expect(copies[kind] >= 1, f"no {kind} copy: {dict(copies)}")
        expect(any(s[8] == 1 << 20 for s in by_kind[MEMCPY]), "no 1 MiB copy")
        expect(any(s[8] == 1 << 20 for s in by_kind[MEMSET]), "no 1 MiB memset")
        expect(len(by_kind[SYNC]) >= 1, "no synchronization recorded")
    else:
        expect(len(by_kind[KERNEL]) >= 5 * count, f"only {len(by_kind[KERNEL])} kernels for {count} steps")
        linked = [k for k in by_kind[KERNEL] if k[0] in launched]
        expect(len(linked) >= 0.9 * len(by_kind[KERNEL]), f"{len(linked)} of {len(by_kind[KERNEL])} kernels linked")
        expect(copies["HtoD Pinned"] >= count, f"{copies['HtoD Pinned']} pinned HtoD copies for {count} steps")
        expect(sum(v for k, v in copies.items() if k.startswith("DtoH")) >= count, f"too few DtoH copies: {dict(copies)}")
        ranges = [s for s in by_kind[USER_RANGE] if name(s).startswith("step ")]
        expect(len(ranges) == count, f"{len(ranges)} NVTX step ranges, expected {count}")
        # Kernels named as Kineto names them: demangled (torch's are all C++ templates).
        mangled = sorted({name(k) for k in by_kind[KERNEL] if name(k).startswith("_Z")})
        expect(not mangled, f"{len(mangled)} kernel names left mangled, e.g. {mangled[:1]}")

    summary = {
        "mode": mode, "kernels": len(by_kind[KERNEL]), "memcpys": len(by_kind[MEMCPY]),
        "memsets": len(by_kind[MEMSET]), "syncs": len(by_kind[SYNC]), "runtime_calls": len(by_kind[RUNTIME]),
        "user_ranges": len(by_kind[USER_RANGE]), "ac2g_flows": len(launched), "copy_kinds": dict(copies),
        "median_device_span_ns": durations[len(durations) // 2] if durations else None,
        "median_launch_lag_ns": sorted(lags)[len(lags) // 2] if lags else None,
        "min_launch_lag_ns": min(lags) if lags else None,
        "notes": notes, "failures": failures,
    }
    print(json.dumps(summary, indent=1))
    sys.exit(1 if failures else 0)


main()
