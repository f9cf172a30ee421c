#!/usr/bin/env python3
"""The trace importer against its floor and its peers (issue 6, "Performance").

Builds a large Kineto trace by repeating a real one from ../shared/testdata
(timestamps shifted so repetitions follow each other, flow and correlation
ids made unique), then measures wall time and peak RSS of a cold process for:

  wc -l                      the read floor
  stepscope report --json    import + analyses, from the trace
  stepscope import -o        import + writing the SQLite run file
  python json.load + agg     Python's json and per-name totals of ops and kernels
  HTA kernel breakdown       HolisticTraceAnalysis: load + get_gpu_kernel_breakdown

each measured in turn, --repeat times, in the same run. Prints a Markdown
table with medians and ratios to stepscope report; --json writes raw figures.

  .venv/bin/python bench/import_trace.py [--mb 500] [--repeat 3] [--skip hta]
      [--keep-trace DIR]   (build the trace once into DIR, reuse it on later runs)
"""

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = REPO.parent / "shared/testdata/kineto/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"

PY_BASELINE = r'''
import json, sys, collections
with open(sys.argv[1]) as f:
    trace = json.load(f)
ops = collections.defaultdict(lambda: [0, 0.0])
kernels = collections.defaultdict(lambda: [0, 0.0, float("inf"), 0.0])
for e in trace["traceEvents"]:
    if e.get("ph") != "X":
        continue
    cat, dur = e.get("cat"), e.get("dur", 0)
    if cat == "cpu_op":
        row = ops[e["name"]]; row[0] += 1; row[1] += dur
    elif cat == "kernel":
        row = kernels[e["name"]]; row[0] += 1; row[1] += dur
        row[2] = min(row[2], dur); row[3] = max(row[3], dur)
print(len(ops), len(kernels))
'''

HTA_SCRIPT = r'''
import sys, logging
logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
analyzer = TraceAnalysis(trace_dir=sys.argv[1])
breakdown = analyzer.get_gpu_kernel_breakdown(visualize=False)
print(len(breakdown[1]))
'''


def build_trace(source: Path, target_mb: int, out: Path) -> dict:
    """Writes `source` repeated until about target_mb MB; returns its facts."""
    with gzip.open(source, "rt") if source.suffix == ".gz" else open(source) as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    timed = [e for e in events if "ts" in e and e.get("ph") != "M"]
    first = min(e["ts"] for e in timed)
    last = max(e["ts"] + e.get("dur", 0) for e in timed)
    period = (last - first) + 1000  # a 1 ms gap between repetitions
    meta = [e for e in events if e.get("ph") == "M"]
    body = [e for e in events if e.get("ph") != "M"]
    header = {k: v for k, v in trace.items() if k != "traceEvents"}
    one_rep = len(json.dumps(body))
    reps = max(1, round(target_mb * 1e6 / one_rep))
    count = 0
    with open(out, "w") as f:
        f.write(json.dumps(header)[:-1] + ', "traceEvents": [\n')
        f.write(",\n".join(json.dumps(e) for e in meta))
        count += len(meta)
        for rep in range(reps):
            shift = rep * period
            lines = []
            for e in body:
                e = dict(e)
                if "ts" in e:
                    e["ts"] = round(e["ts"] + shift, 3)
                if "id" in e and isinstance(e["id"], int):
                    e["id"] += rep * 10_000_000
                args = e.get("args")
                if isinstance(args, dict) and isinstance(args.get("correlation"), int):
                    e["args"] = dict(args, correlation=args["correlation"] + rep * 10_000_000)
                lines.append(json.dumps(e))
            f.write(",\n" + ",\n".join(lines))
            count += len(lines)
        f.write("\n]}\n")
    return {"source": str(source), "repetitions": reps, "events": count, "bytes": out.stat().st_size}


def measure(cmd: list) -> dict:
    """Wall and CPU seconds and peak RSS (MB) of one cold child process, by
    /usr/bin/time (a small parent, so the peak is the command's own: a child
    forked from this Python would start with its RSS)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        timed = ["/usr/bin/time", "-o", report.name, "-f", "%e %U %S %M"] + [str(c) for c in cmd]
        child = subprocess.run(timed, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if child.returncode != 0:
            raise SystemExit(f"{' '.join(map(str, cmd))} failed ({child.returncode}): "
                             f"{child.stderr.decode(errors='replace')[-2000:]}")
        wall, user, system, max_kb = report.read().split()[-4:]
    return {"wall_s": float(wall), "cpu_s": float(user) + float(system), "peak_rss_mb": int(max_kb) / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stepscope", default=str(REPO / "build/stepscope"))
    parser.add_argument("--source", default=str(DEFAULT_SOURCE))
    parser.add_argument("--mb", type=int, default=500, help="size of the trace to build (MB)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip", default="", help="comma-separated: wc,report,import,python,hta")
    parser.add_argument("--json", help="write raw figures here")
    parser.add_argument("--keep-trace", help="build the trace here and keep it (reused if it exists)")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))

    with tempfile.TemporaryDirectory(prefix="stepscope-bench-") as tmp:
        # HTA reads every trace of a directory: the trace lives alone in one.
        trace_dir = Path(args.keep_trace) if args.keep_trace else Path(tmp) / "trace"
        trace_dir.mkdir(parents=True, exist_ok=True)
        trace = trace_dir / "rank-0.trace.json"
        facts_file = trace_dir.parent / (trace_dir.name + ".facts.json")
        if args.keep_trace and trace.exists() and facts_file.exists():
            facts = json.loads(facts_file.read_text())
        else:
            t0 = time.perf_counter()
            facts = build_trace(Path(args.source), args.mb, trace)
            facts_file.write_text(json.dumps(facts))
            print(f"built {trace.name}: {facts['bytes'] / 1e6:.0f} MB, {facts['events']:,} events "
                  f"({facts['repetitions']} x {Path(args.source).name}) in {time.perf_counter() - t0:.0f} s",
                  file=sys.stderr)
        script = Path(tmp) / "baseline.py"
        script.write_text(PY_BASELINE)
        hta_script = Path(tmp) / "hta_breakdown.py"
        hta_script.write_text(HTA_SCRIPT)
        run_db = Path(tmp) / "run.db"
        tools = {
            "wc -l (read floor)": ["wc", "-l", str(trace)],
            "stepscope report --json": [args.stepscope, "report", str(trace), "--json"],
            "stepscope import -o run.db": [args.stepscope, "import", str(trace), "-o", str(run_db)],
            "python json.load + aggregation": [sys.executable, str(script), str(trace)],
            "HTA load + kernel breakdown": [sys.executable, str(hta_script), str(trace_dir)],
        }
        keys = dict(zip(tools, ["wc", "report", "import", "python", "hta"]))
        tools = {name: cmd for name, cmd in tools.items() if keys[name] not in skip}
        subprocess.run(["cat", str(trace)], stdout=subprocess.DEVNULL, check=True)  # warm the page cache
        results = {name: [] for name in tools}
        for rep in range(args.repeat):
            for name, cmd in tools.items():
                if keys[name] == "hta" and rep > 0:
                    continue  # minutes per run: once is enough for a ratio
                run_db.unlink(missing_ok=True)
                figures = measure(cmd)
                results[name].append(figures)
                print(f"  {name}: {figures['wall_s']:.2f} s wall, {figures['cpu_s']:.2f} s CPU, "
                      f"{figures['peak_rss_mb']:.0f} MB", file=sys.stderr)

    size_mb = facts["bytes"] / 1e6
    base = results.get("stepscope report --json")
    base_wall = statistics.median(r["wall_s"] for r in base) if base else None
    base_cpu = statistics.median(r["cpu_s"] for r in base) if base else None
    print(f"\nTrace: {size_mb:.0f} MB, {facts['events']:,} events; median of {args.repeat} cold runs "
          f"(HTA: 1); load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs\n")
    print("| command | wall s | CPU s | MB/s (wall) | MB/s (CPU) | peak RSS MB | RSS / file | "
          "wall vs report | CPU vs report |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, runs in results.items():
        wall = statistics.median(r["wall_s"] for r in runs)
        cpu = statistics.median(r["cpu_s"] for r in runs)
        rss = statistics.median(r["peak_rss_mb"] for r in runs)
        vs_wall = f"{wall / base_wall:.1f}x" if base_wall else "-"
        vs_cpu = f"{cpu / base_cpu:.1f}x" if base_cpu else "-"
        print(f"| {name} | {wall:.2f} | {cpu:.2f} | {size_mb / wall:.0f} | {size_mb / max(cpu, 1e-3):.0f} | "
              f"{rss:.0f} | {rss / size_mb:.2f} | {vs_wall} | {vs_cpu} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"trace": facts, "results": results}, indent=1))


if __name__ == "__main__":
    main()
