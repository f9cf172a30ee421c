#!/usr/bin/env python3
"""`report` of a whole job (issue 28): the runs of 64 ranks against the run of one.

Records tests/integration/programs/ddp_job.py once as a job of --ranks-per-run ranks on one
"node" (torchrun --nproc-per-node, gloo on the CPU; or takes --source RUN.db), then makes a job
of --ranks ranks from it: --ranks / --ranks-per-run copies of the run, each relabelled as
another node (metadata host, node_rank, and the ranks of its processes), in one directory. Times,
--rounds times each, interleaved:

  one   `report --json` of the source run alone
  job   `report --json DIR` of the whole job

Prints wall time and peak RSS (medians) and their ratio. --baseline BINARY times another build's
`stepscope` (say, a copy of the commit before a change) in the same rounds, as `one-base` and
`job-base`, on the same files; --old-schema N (2 to 5) adds this build on copies of the runs in
schema N as `one-N` and `job-N`, and the baseline runs on those copies instead (a build reads no
schema newer than its own); --save-source PATH keeps the recording for the next run's --source.

  bench/job_report.py [--ranks 64] [--ranks-per-run 1] [--steps 1000] [--rounds 3] [--source RUN.db]
                      [--save-source PATH] [--stepscope BINARY] [--baseline BINARY] [--old-schema N]
"""
import argparse
import os
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEPSCOPE = os.path.join(ROOT, "build", "stepscope")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import run_samples  # noqa: E402

OLD_SCHEMA_WRITERS = {2: run_samples.write_schema_two, 3: run_samples.write_schema_three,
                      4: run_samples.write_schema_four, 5: run_samples.write_schema_five}


def record_source(path, ranks_per_run, steps):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, STEPSCOPE_PYTHON_DIR=os.path.join(ROOT, "python"))
    torchrun = os.path.join(ROOT, ".venv", "bin", "torchrun")
    subprocess.run([STEPSCOPE, "record", "-o", path, "--", torchrun, "--nproc-per-node", str(ranks_per_run),
                    "--master-addr", "127.0.0.1", "--master-port", str(port),
                    os.path.join(ROOT, "tests", "integration", "programs", "ddp_job.py"), "--steps", str(steps),
                    "--item-ms", "0.5", "--slow-rank", "1", "--slow-item-ms", "1"],
                   env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def relabel(source, path, node, ranks_per_run):
    """A copy of `source` as node `node` of the job: its processes' ranks moved up by node x ranks per run."""
    shutil.copyfile(source, path)
    db = sqlite3.connect(path)
    db.execute("INSERT OR REPLACE INTO metadata(key, value) VALUES ('host', ?), ('node_rank', ?)",
               (f"node{node:03d}", str(node)))
    for key, value in db.execute("SELECT key, value FROM metadata WHERE key LIKE '%.rank'").fetchall():
        if key.startswith(("hooks.", "process.")) and value.isdigit():
            db.execute("UPDATE metadata SET value = ? WHERE key = ?", (str(int(value) + node * ranks_per_run), key))
    db.commit()
    db.close()


def timed(command):
    """Wall seconds and peak RSS (MiB) of `command`."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - start
    if status != 0:
        sys.exit(f"{command} failed: status {status}")
    return seconds, usage.ru_maxrss / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--ranks-per-run", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=1000, help="steps of the recorded job")
    parser.add_argument("--source")
    parser.add_argument("--save-source")
    parser.add_argument("--stepscope", default=STEPSCOPE)
    parser.add_argument("--baseline")
    parser.add_argument("--old-schema", type=int, choices=sorted(OLD_SCHEMA_WRITERS),
                        help="this build on copies in this schema too; the baseline on them")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        source = args.source or os.path.join(work, "source.db")
        if not args.source:
            record_source(source, args.ranks_per_run, args.steps)
        if args.save_source:
            shutil.copyfile(source, args.save_source)
        runs = args.ranks // args.ranks_per_run

        def make_job(source, job):
            os.mkdir(job)
            for node in range(runs):
                relabel(source, os.path.join(job, f"node{node:03d}.db"), node, args.ranks_per_run)
            return source, job

        # suffix: (the build, the source run, the job's directory)
        files = make_job(source, os.path.join(work, "job"))
        binaries = {"": (args.stepscope, *files)}
        if args.old_schema:
            old_source = os.path.join(work, f"source-schema{args.old_schema}.db")
            OLD_SCHEMA_WRITERS[args.old_schema](source, old_source)
            files = make_job(old_source, os.path.join(work, f"job-schema{args.old_schema}"))
            binaries[f"-{args.old_schema}"] = (args.stepscope, *files)
        if args.baseline:
            binaries["-base"] = (args.baseline, *files)
        results = {f"{what}{suffix}": [] for suffix in binaries for what in ("one", "job")}
        for _ in range(args.rounds):
            for suffix, (binary, one, job) in binaries.items():
                results[f"one{suffix}"].append(timed([binary, "report", "--json", one]))
                results[f"job{suffix}"].append(timed([binary, "report", "--json", job]))
        size = os.path.getsize(source)
        print(f"{runs} runs of {args.ranks_per_run} rank(s), {size / 1e6:.2f} MB each; medians of {args.rounds}; "
              f"{os.cpu_count()} CPUs")
        medians = {}
        for name, values in results.items():
            medians[name] = (statistics.median(v[0] for v in values), statistics.median(v[1] for v in values))
            print(f"  {name:8} {medians[name][0]:7.3f} s  {medians[name][1]:8.1f} MiB peak RSS")
        for suffix in binaries:
            job_, one = medians[f"job{suffix}"], medians[f"one{suffix}"]
            print(f"  job{suffix} / one{suffix}: {job_[0] / one[0]:.1f}x the time, {job_[1] / one[1]:.1f}x the memory")


if __name__ == "__main__":
    main()
