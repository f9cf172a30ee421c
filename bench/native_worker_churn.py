#!/usr/bin/env python3
"""`record --native` on a job whose DataLoader workers start again every epoch (issue 31).

Each new worker maps libtorch; the unwinder names its frames from libtorch_cpu.so's symbol
index (545,000 symbols, 75-150 ms to make on the AMD EPYC VM). This measures what sharing the
indexes between the tree's processes saves: the recorder attaches (`--pid`, so that
/usr/bin/time counts the recorder alone) for --seconds to tests/integration/programs/
native_workers.py, epochs of 256 items of 20 small matmuls each in two workers, with
persistent_workers off (PyTorch's default), and prints per run the recorder's CPU, the native
samples merged and not, the symbol indexes made (metadata native_symbol_indexes; absent before
it existed), and the job's epochs in the same time. --baseline BINARY adds another build (say,
the commit before a change) to the same rounds, run in turn with it.

  bench/native_worker_churn.py [--rounds 3] [--seconds 18] [--stepscope BIN] [--baseline BIN]
"""
import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

JOB = os.path.join(ROOT, "tests", "integration", "programs", "native_workers.py")
ITEMS_PER_EPOCH = 256

# The job starts this long before the recorder attaches (its imports), and runs this much
# longer than the recording.
LEAD_S = 3
TAIL_S = 3


def one_run(binary, seconds, python, work):
    run = os.path.join(work, "run.db")
    if os.path.exists(run):
        os.remove(run)
    job = subprocess.Popen([python, JOB, str(seconds + LEAD_S + TAIL_S), str(ITEMS_PER_EPOCH)], stdout=subprocess.PIPE,
                           text=True)
    time.sleep(LEAD_S)
    timed = subprocess.run(["/usr/bin/time", "-f", "%U %S", binary, "record", "--native", "--pid", str(job.pid),
                            "--duration", str(seconds), "-o", run], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True, check=True)
    epochs = int(job.communicate()[0].split()[-1])
    user, system = (float(v) for v in timed.stderr.strip().splitlines()[-1].split())
    metadata = dict(sqlite3.connect(run).execute("SELECT key, value FROM metadata WHERE key LIKE 'native_%'"))
    return {"cpu_s": user + system, "epochs": epochs, "merged": int(metadata.get("native_merged", 0)),
            "unmerged": int(metadata.get("native_unmerged", 0)),
            "indexes": metadata.get("native_symbol_indexes", "-")}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stepscope", default=os.path.join(ROOT, "build", "stepscope"))
    p.add_argument("--baseline", help="another build's stepscope, run in turn in the same rounds")
    p.add_argument("--python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=18)
    args = p.parse_args()
    builds = {"stepscope": args.stepscope}
    if args.baseline:
        builds["baseline"] = args.baseline
    work = tempfile.mkdtemp()
    results = {name: [] for name in builds}
    print("%-10s %8s %7s %8s %9s %8s" % ("build", "CPU s", "epochs", "merged", "unmerged", "indexes"))
    for round_number in range(args.rounds):
        order = list(builds.items())
        if round_number % 2:
            order.reverse()
        for name, binary in order:
            r = one_run(binary, args.seconds, args.python, work)
            results[name].append(r)
            print("%-10s %8.2f %7d %8d %9d %8s" % (name, r["cpu_s"], r["epochs"], r["merged"], r["unmerged"],
                                                   r["indexes"]))
            sys.stdout.flush()
    for name, runs in results.items():
        print("%s: median recorder CPU %.2f s in %.0f s, %.0f epochs, %.0f samples merged" % (
            name, statistics.median(r["cpu_s"] for r in runs), args.seconds,
            statistics.median(r["epochs"] for r in runs), statistics.median(r["merged"] for r in runs)))


if __name__ == "__main__":
    main()
