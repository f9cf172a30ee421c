#!/usr/bin/env python3
"""Windows of a long, many-rank run (issue 33): how long `report` takes and how much memory it
needs for a ten-minute window and for the whole run, as the run grows.

Records examples/train_lm.py with two DataLoader workers for --source-seconds once (or takes
--source RUN.db), then for each --hours makes an 8-rank run of that length with
build/bench/stepscope_long_run (the recording relabelled per rank and repeated end to end,
committed a repetition at a time as a recorder commits), and times, --rounds times each,
interleaved:

  window    `report --json --window -600:` (the last ten minutes: read through the time index)
  whole     `report --json` (the whole run)
  window-4  the same window of the same run in schema 4 (a row per span), and
  whole-4   the whole of it: runs up to --schema-4-hours, as the copy is made in Python
  window-2  the same window of the same run in schema 2 (a row per sample and counter value, no
            index: read whole, then cut); only for runs up to --schema-2-hours

Prints wall time and peak RSS (medians), the file's size and its bytes per sample. --baseline
BINARY adds `window` and `whole` of another build's `stepscope` (say, a copy of the commit before
a change) to the same rounds, as `window-b` and `whole-b`, on the schema-4 copy when there is one
(a build from before schema 5 reads no newer file).

  bench/long_run.py [--hours 0.25,1] [--ranks 8] [--rounds 3] [--source RUN.db] [--baseline BINARY]
                    [--schema-2-hours H] [--schema-4-hours H] [--stepscope BINARY]
"""
import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEPSCOPE = os.path.join(ROOT, "build", "stepscope")
LONG_RUN = os.path.join(ROOT, "build", "bench", "stepscope_long_run")
sys.path.insert(0, os.path.join(ROOT, "tools"))
from run_samples import write_schema_four, write_schema_two  # noqa: E402


def record_source(path, seconds):
    env = dict(os.environ, STEPSCOPE_PYTHON_DIR=os.path.join(ROOT, "python"))
    python = os.path.join(ROOT, ".venv", "bin", "python")
    job = subprocess.Popen([STEPSCOPE, "record", "-o", path, "--", python, os.path.join(ROOT, "examples", "train_lm.py"),
                            "--num-workers", "2", "--steps", "1000000"], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        job.wait(seconds)
    except subprocess.TimeoutExpired:
        job.terminate()  # the recorder forwards it to the job and writes the run
        job.wait()


def timed(args, binary=STEPSCOPE):
    """(wall seconds, peak RSS in MiB, refused) of one run of stepscope ARGS, output discarded; refused:
    the run did not fit in the memory at hand, and stepscope said so before reading it (docs/report.md)."""
    out = subprocess.run(["/usr/bin/time", "-f", "%e %M", binary, *args], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    refused = out.returncode == 2 and "takes about" in out.stderr
    if out.returncode != 0 and not refused:
        raise RuntimeError(f"stepscope {' '.join(args)}: exit status {out.returncode}: {out.stderr}")
    wall, rss_kib = out.stderr.strip().splitlines()[-1].split()
    return float(wall), int(rss_kib) / 1024, refused


def samples_in(path):
    db = sqlite3.connect(path)
    return db.execute("SELECT total(count) FROM sample_blocks").fetchone()[0]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--hours", default="0.25,1")
    p.add_argument("--ranks", type=int, default=8)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--source")
    p.add_argument("--source-seconds", type=float, default=30)
    p.add_argument("--schema-2-hours", type=float, default=0.25)
    p.add_argument("--schema-4-hours", type=float, default=0)
    p.add_argument("--baseline")
    p.add_argument("--stepscope", default=STEPSCOPE, help="the build to time (default: build/stepscope)")
    args = p.parse_args()
    work = tempfile.mkdtemp(prefix="stepscope-long-run-")
    source = args.source or os.path.join(work, "source.db")
    if not args.source:
        record_source(source, args.source_seconds)
    print(f"source: {source}, {int(samples_in(source))} samples")
    print(f"{'hours':>6} {'samples':>11} {'file MB':>8} {'B/sample':>8}  {'what':<9} {'wall s':>7} {'peak MiB':>9}")
    for hours in (float(h) for h in args.hours.split(",")):
        run = os.path.join(work, f"long-{hours}h.db")
        subprocess.run([LONG_RUN, source, run, str(args.ranks), str(hours)], check=True, stdout=subprocess.DEVNULL)
        # name: (the file, the build)
        cases = {"window": (run, args.stepscope), "whole": (run, args.stepscope)}
        baseline_run = run
        if hours <= args.schema_4_hours:
            baseline_run = os.path.join(work, f"long-{hours}h-schema4.db")
            write_schema_four(run, baseline_run)
            cases["window-4"] = cases["whole-4"] = (baseline_run, args.stepscope)
        if args.baseline:
            cases["window-b"] = cases["whole-b"] = (baseline_run, args.baseline)
        if hours <= args.schema_2_hours:
            old = os.path.join(work, f"long-{hours}h-schema2.db")
            write_schema_two(run, old)
            cases["window-2"] = (old, args.stepscope)
        results = {name: [] for name in cases}
        for _ in range(args.rounds):
            for name, (path, binary) in cases.items():
                window = ["--window", "-600:"] if name.startswith("window") else []
                results[name].append(timed(["report", "--json", path, *window], binary))
        samples = samples_in(run)
        for name, runs in results.items():
            wall = statistics.median(r[0] for r in runs)
            rss = statistics.median(r[1] for r in runs)
            size = os.path.getsize(cases[name][0])
            refused = "  refused: too large for the memory at hand" if any(r[2] for r in runs) else ""
            print(f"{hours:>6} {int(samples):>11} {size / 1e6:>8.1f} {size / samples:>8.2f}  {name:<9} {wall:>7.2f} "
                  f"{rss:>9.0f}{refused}")
        for path in {path for path, _ in cases.values()}:
            os.remove(path)


if __name__ == "__main__":
    main()
