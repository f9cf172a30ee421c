#!/usr/bin/env python3
"""The trace importer against its floor and its peers (issue 6, "Performance").

Builds a large Kineto trace by repeating a real one from ../shared/testdata in
its own text (Kineto's indentation and number formats; timestamps shifted so
repetitions follow each other, flow and correlation ids made unique), then
measures wall time and peak RSS of a cold process for:

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
import math
import os
import re
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


# The numbers a repetition changes, as Kineto writes them: a timestamp (shifted
# by whole microseconds, its digits otherwise kept), a flow's id and an args'
# correlation (made unique per repetition).
SHIFTED = re.compile(r'"(ts|id|correlation)": (\d+)(\.\d+)?')
ID_STRIDE = 10_000_000


def split_events(text: str):
    """The text up to and including the events' '[', each event as (parsed, its
    own text), and the text from the ']' on."""
    bracket = text.index("[", text.index('"traceEvents"'))
    decoder, between = json.JSONDecoder(), re.compile(r"[\s,]*")
    pos, events = bracket + 1, []
    while True:
        pos = between.match(text, pos).end()
        if text[pos] == "]":
            return text[:bracket + 1], events, text[pos:]
        event, end = decoder.raw_decode(text, pos)
        events.append((event, text[pos:end]))
        pos = end


def event_template(event: dict, text: str) -> list:
    """`text` cut around the numbers SHIFTED finds: literal strings and
    (key, integer part, fraction) tuples. Refuses an event whose numbers are
    not where the parsed event has them, so nothing is shifted by accident."""
    parts, pos, seen = [], 0, {"ts": 0, "id": 0, "correlation": 0}
    for m in SHIFTED.finditer(text):
        parts.append(text[pos:m.start()])
        key = m.group(1)
        parts.append((key, int(m.group(2)), m.group(3) or ""))
        seen[key] += 1
        pos = m.end()
    parts.append(text[pos:])
    args = event.get("args") if isinstance(event.get("args"), dict) else {}
    expected = {"ts": int("ts" in event), "id": int(isinstance(event.get("id"), int)),
                "correlation": int(isinstance(args.get("correlation"), int))}
    if seen != expected:
        raise SystemExit(f"cannot repeat this event textually (numbers {seen}, expected {expected}): {text[:200]}")
    return parts


def render(template: list, shift_us: int, id_shift: int) -> str:
    out = []
    for part in template:
        if isinstance(part, str):
            out.append(part)
        else:
            key, integer, fraction = part
            delta = shift_us if key == "ts" else id_shift
            out.append(f'"{key}": {integer + delta}{fraction}')
    return "".join(out)


def build_trace(source: Path, target_mb: int, out: Path) -> dict:
    """Writes `source` repeated until about target_mb MB, in the source's own
    text (Kineto's layout and number formats: what a real trace makes the
    reader do), with timestamps shifted and ids made unique per repetition;
    returns its facts."""
    with gzip.open(source, "rt") if source.suffix == ".gz" else open(source) as f:
        text = f.read()
    head, events, tail = split_events(text)
    timed = [e for e, _ in events if "ts" in e and e.get("ph") != "M"]
    first = min(e["ts"] for e in timed)
    last = max(e["ts"] + e.get("dur", 0) for e in timed)
    period_us = math.ceil(last - first) + 1000  # a 1 ms gap between repetitions
    meta = [t for e, t in events if e.get("ph") == "M"]
    body = [event_template(e, t) for e, t in events if e.get("ph") != "M"]
    separator = ",\n  "
    one_rep = sum(len(render(b, 0, 0)) + len(separator) for b in body)
    reps = max(1, round(target_mb * 1e6 / one_rep))
    with open(out, "w") as f:
        f.write(head + "\n  " + separator.join(meta))
        for rep in range(reps):
            f.write(separator + separator.join(render(b, rep * period_us, rep * ID_STRIDE) for b in body))
        f.write("\n  " + tail)
    return {"source": str(source), "repetitions": reps, "events": len(meta) + reps * len(body),
            "bytes": out.stat().st_size, "layout": "the source's own text"}


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
