#!/usr/bin/env python3
"""`stepscope record --native` side by side with py-spy's `--native` (issue 31, "Performance").

stepscope takes native stacks through perf events (the kernel copies each running thread's
registers and stack; libdwfl unwinds the copy): the target is never stopped. py-spy
`--native` stops every thread of the target (ptrace) for each sample and unwinds it in place.
Every tool attaches with `--pid` right after the target is spawned (so all miss the same
start-up) and ends when the target exits. Configurations are interleaved round by round
(A B C D, B C D A, ...) so that a change in the machine's load hits them alike:

  t. the README's training job (examples/train_lm.py --num-workers 2, 3 processes) at
     100 Hz: bare (no tool), stepscope Python-only, stepscope --native, py-spy --native
     --subprocesses; the job's own throughput (samples/s from its `summary:` line) and the
     tool's CPU (user + sys from wait4) per sample and per second;
  k. 1 kHz on a 30-frame Python stack: bench/targets/throughput.py's loop entered 30 frames
     deep (it counts its own iterations: the target's slowdown) with the same four
     configurations, and bench/targets/deep_stack.py (part a of sampler_peers.py) with the
     three tools; CPU per sample over the whole run and in the steady state.

--split-cpus pins the target (and its children) to CPU 0 and every tool to CPU 1 (taskset): the
job's slowdown then is what a tool costs it in its own processes (the kernel's sampling, py-spy's
stops), apart from the tool's CPU, which on a 2-vCPU VM the job would otherwise share, as it does
not on a training node with cores to spare.

With --native, stepscope's run holds native_merged / native_unmerged / native_incomplete /
native_lost (docs/run-format.md): the tables give the merged share. When perf events are
refused, stepscope says "some native stacks are missing ..." and the tables say so.

usage: native_peers.py [--quick] [--only t,k] [--rounds N] [--k-rounds N] [--steps N]
                       [--seconds S] [--stepscope PATH] [--python PYTHON] [--split-cpus]
                       [--no-py-spy] [--json OUT.json]
Python 3 standard library only; helpers from sampler_peers.py (same folder).
"""
import argparse
import json
import math
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sampler_peers import (ROOT, TARGETS, TRAINING_JOB, VENV_BIN, Stepscope,  # noqa: E402
                           folded_stacks, function_of_label, load, median_spread, rotations,
                           table, task_cpu_ns)

PY_SPY = VENV_BIN / "py-spy"
MISSING = "some native stacks are missing"

# The throughput target's loop 30 frames deep: <module>, nest(26) .. nest(0), measure, work.
# argv: TARGETS SECONDS WARMUP [WINDOW] (one window of SECONDS when not given).
DEEP_THROUGHPUT = ("import json, sys; sys.path.insert(0, sys.argv[1]); import throughput; "
                   "print(json.dumps(throughput.nest(26, float(sys.argv[2]), float(sys.argv[3]), "
                   "float((sys.argv + [sys.argv[2]])[4]))), flush=True)")


class Config:
    """One way of running the target: bare, or with a tool attached."""

    def __init__(self, name, exe=None, kind=None, native=False):
        self.name, self.exe, self.kind, self.native = name, exe and str(exe), kind, native

    def argv(self, pid, rate, out, duration=None):
        if self.kind == "stepscope":
            argv = [self.exe, "record"] + (["--native"] if self.native else []) + [
                "--rate", str(rate), "--pid", str(pid), "-o", out]
            return argv + (["--duration", f"{duration:g}"] if duration else [])
        if self.kind == "py-spy":  # --native cannot be combined with --nonblocking
            argv = [self.exe, "record", "--native", "--subprocesses", "--rate", str(rate),
                    "--pid", str(pid), "--format", "raw", "-o", out]
            return argv + (["--duration", str(math.ceil(duration))] if duration else [])
        return None


def configs(args, bare=True):
    stepscope, found = Path(args.stepscope), []
    if bare:
        found.append(Config("bare (no tool)"))
    found += [Config("stepscope", stepscope, "stepscope"),
              Config("stepscope --native", stepscope, "stepscope", native=True)]
    if PY_SPY.exists():
        found.append(Config("py-spy --native", PY_SPY, "py-spy"))
    else:
        print(f"note: {PY_SPY} not found (scripts/setup installs it); py-spy left out",
              file=sys.stderr)
    return found


def native_counts(db):
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT key, value FROM metadata WHERE key LIKE 'native%'").fetchall()
    return {key: int(value) for key, value in rows if value.isdigit()}


def non_idle_samples(exe, db):
    """stepscope's samples of threads on a CPU or runnable (`export` leaves idle ones out,
    as py-spy does): the count to set beside py-spy's."""
    folded = db + ".collapsed"
    subprocess.run([exe, "export", db, "--format", "collapsed", "-o", folded], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return sum(count for _, count in folded_stacks(folded, function_of_label))


# (target, tool) command prefixes: none, or --split-cpus's.
NO_PINS = ([], [])
SPLIT_CPUS = (["taskset", "-c", "0"], ["taskset", "-c", "1"])


def run_once(config, target_argv, rate, workdir, duration=None, marker=None, timeout=600, pins=NO_PINS):
    """Spawns the target and, right after, the tool attached to it; both run to the
    target's end, each with its prefix of `pins` (taskset execs: the pid is the program's).
    Returns the target's stdout, its exit time and, with a tool, the tool's CPU seconds (wait4), samples and a trace [(s since the tool's start, CPU ns)]
    of the tool's CPU read from /proc every 0.25 s. marker: a string of the
    target's stdout whose first appearance is noted (s since the target's start)."""
    tag = config.name.replace(" ", "_").replace("(", "").replace(")", "")
    target_out = workdir / f"{tag}.target"
    with open(target_out, "wb") as out:
        start = time.monotonic()
        target = subprocess.Popen(pins[0] + target_argv, stdout=out, stderr=subprocess.DEVNULL)
    ended = {}

    def reap():  # wait4: the target's CPU, its reaped children (DataLoader workers) included
        _, status, usage = os.wait4(target.pid, 0)
        target.returncode = os.waitstatus_to_exitcode(status)
        ended.update(at=time.monotonic(), cpu_s=usage.ru_utime + usage.ru_stime,
                     sys_s=usage.ru_stime)

    waiter = threading.Thread(target=reap)
    waiter.start()
    result = {}
    tool = None
    try:
        if config.kind:
            result_file = str(workdir / (tag + (".db" if config.kind == "stepscope" else ".txt")))
            if os.path.exists(result_file):
                os.unlink(result_file)
            err = open(workdir / f"{tag}.stderr", "wb")
            tool_start = time.monotonic()
            tool = subprocess.Popen(pins[1] + config.argv(target.pid, rate, result_file, duration),
                                    stdout=subprocess.DEVNULL, stderr=err)
            err.close()
        trace, marked = [], None
        deadline = time.monotonic() + timeout
        while True:
            if tool is not None:
                pid, status, usage = os.wait4(tool.pid, os.WNOHANG)
                if pid == tool.pid:
                    tool.returncode = os.waitstatus_to_exitcode(status)
                    result["cpu_s"] = usage.ru_utime + usage.ru_stime
                    result["wall_s"] = time.monotonic() - tool_start
                    break
                trace.append((time.monotonic() - tool_start, task_cpu_ns(tool.pid)))
            elif "at" in ended:
                break
            if marker and marked is None and marker.encode() in target_out.read_bytes():
                marked = time.monotonic() - start
            if time.monotonic() > deadline:
                raise RuntimeError(f"{config.name}: still running after {timeout} s")
            time.sleep(0.25)
        waiter.join(timeout=60)
    finally:
        for proc in (tool, target):
            if proc is not None and proc.returncode is None:
                try:
                    proc.kill()
                except ProcessLookupError:
                    pass
        waiter.join(timeout=10)
    stdout = target_out.read_text(errors="replace")
    if target.returncode != 0:
        raise RuntimeError(f"the target exited with {target.returncode}: {stdout[-400:]!r}")
    result.update(target_end_s=ended["at"] - start, target_cpu_s=ended["cpu_s"],
                  target_sys_s=ended["sys_s"],
                  marked_s=marked, stdout=stdout)
    if tool is None:
        return result
    stderr = (workdir / f"{tag}.stderr").read_text(errors="replace")
    if tool.returncode != 0:
        raise RuntimeError(f"{config.name} exited with {tool.returncode}: {stderr[-800:]}")
    result.update(trace=trace, tool_offset_s=tool_start - start,
                  refused=next((line.strip() for line in stderr.splitlines() if MISSING in line),
                               None))
    if config.kind == "stepscope":
        result["samples"] = Stepscope(config.exe).summary(stderr)["samples"]
        result["non_idle_samples"] = non_idle_samples(config.exe, result_file)
        if config.native:
            result["native"] = native_counts(result_file)
    else:
        result["samples"] = result["non_idle_samples"] = sum(
            count for _, count in folded_stacks(result_file, function_of_label))
    result["us_per_sample"] = result["cpu_s"] * 1e6 / max(result["samples"], 1)
    result["us_per_non_idle_sample"] = result["cpu_s"] * 1e6 / max(result["non_idle_samples"], 1)
    result["ms_per_s"] = result["cpu_s"] * 1e3 / result["wall_s"]
    return result


def cpu_between(trace, t1, t2):
    """CPU ns the tool used between t1 and t2 s after its start, from the nearest readings
    inside the window; (ns, seconds actually covered) or None."""
    inside = [(t, ns) for t, ns in trace if t1 <= t <= t2 and ns > 0]
    if len(inside) < 2:
        return None
    return inside[-1][1] - inside[0][1], inside[-1][0] - inside[0][0]


def merged_share(native):
    both = native.get("native_merged", 0) + native.get("native_unmerged", 0)
    return 100 * native.get("native_merged", 0) / both if both else float("nan")


def native_rows(results):
    rows = []
    for name, runs in results.items():
        natives = [r["native"] for r in runs if "native" in r]
        if not natives:
            continue
        get = lambda key: [n.get(key, 0) for n in natives]  # noqa: E731
        both = [n.get("native_merged", 0) + n.get("native_unmerged", 0) for n in natives]
        rows.append([name, median_spread([merged_share(n) for n in natives], 1),
                     median_spread(get("native_merged"), 0),
                     median_spread(get("native_unmerged"), 0),
                     median_spread([100 * i / max(b, 1) for i, b in
                                    zip(get("native_incomplete"), both)], 1),
                     median_spread(get("native_lost"), 0),
                     median_spread(get("native_refused_threads"), 0)])
    return table(["run", "merged % (of merged + unmerged)", "merged", "unmerged",
                  "incomplete walks %", "lost copies", "refused threads"], rows)


def refusals(results):
    notes = sorted({r["refused"] for runs in results.values() for r in runs if r.get("refused")})
    return ([f"**Perf events refused** in some runs, so native figures are incomplete: "
             f"`{note}`" for note in notes] + [""]) if notes else []


def cpu_ratio_lines(medians, what):
    if "stepscope" in medians and "stepscope --native" in medians and medians["stepscope"]:
        ratio = medians["stepscope --native"] / medians["stepscope"]
        line = f"stepscope --native / stepscope, {what}: {ratio:.2f} (goal ≤ 3)"
        if "py-spy --native" in medians:
            line += (f"; py-spy --native / stepscope: "
                     f"{medians['py-spy --native'] / medians['stepscope']:.2f}")
        return [line, ""]
    return []


# ---------------------------------------------------------------- t. the training job


def training_argv(steps):
    return [str(VENV_BIN / "python"), str(TRAINING_JOB), "--steps", str(steps),
            "--num-workers", "2", "--seed", "0"]


def summary_of(stdout):
    for line in reversed(stdout.splitlines()):
        if line.startswith("summary: "):
            return json.loads(line[len("summary: "):])
    raise RuntimeError(f"the training job printed no summary: {stdout[-400:]!r}")


def bench_training(all_configs, steps, rounds, rate, workdir, pins=NO_PINS):
    results = {c.name: [] for c in all_configs}
    for rnd, order in rotations(all_configs, rounds):
        for config in order:
            run = run_once(config, training_argv(steps), rate, workdir, marker="train_lm:", pins=pins)
            run["round"] = rnd
            summary = summary_of(run.pop("stdout"))
            run["samples_per_s"] = summary["samples_per_s"]
            run["loop_wall_s"] = summary["wall_s"]
            if config.kind and run["marked_s"] is not None:
                # The training loop: from the line printed just before it to the end.
                t1 = run["marked_s"] - run["tool_offset_s"] + 1.0
                t2 = run["target_end_s"] - run["tool_offset_s"] - 0.5
                steady = cpu_between(run["trace"], t1, t2)
                if steady:
                    run["loop_ms_per_s"] = steady[0] / 1e6 / steady[1]
            run.pop("trace", None)
            results[config.name].append(run)
            print(f"  t round {rnd + 1}: {config.name}: {run['samples_per_s']} samples/s"
                  + (f", tool {run['cpu_s']:.2f} s CPU, {run['samples']} samples"
                     if config.kind else "") + f" ({load()})", file=sys.stderr, flush=True)
    return results


def signed_spread(values, digits=1):
    """'+median (min … max, n=N)', for figures either side of zero."""
    if not values:
        return "–"
    med = statistics.median(values)
    if len(values) == 1:
        return f"{med:+.{digits}f}"
    return (f"{med:+.{digits}f} ({min(values):+.{digits}f} … {max(values):+.{digits}f}, "
            f"n={len(values)})")


def slowdown_cell(values, bare):
    """Slowdown in % against the median of the bare runs."""
    if not bare or not values:
        return "–"
    return signed_spread([100 * (1 - v / bare) for v in values])


def paired_cell(runs, bare_runs, key):
    """Slowdown in % of each run against the bare run of the same round."""
    bare_of = {r["round"]: r[key] for r in bare_runs}
    return signed_spread([100 * (1 - r[key] / bare_of[r["round"]]) for r in runs
                          if r["round"] in bare_of])


def report_training(results, steps, rate, load_text):
    bare_runs = results.get("bare (no tool)", [])
    bare = statistics.median([r["samples_per_s"] for r in bare_runs]) if bare_runs else None
    rows, per_sample, per_second = [], {}, {}
    for name, runs in results.items():
        throughput = [r["samples_per_s"] for r in runs]
        row = [name, median_spread(throughput, 2), slowdown_cell(throughput, bare),
               paired_cell(runs, bare_runs, "samples_per_s"),
               median_spread([r["target_cpu_s"] for r in runs], 1),
               median_spread([r["target_sys_s"] for r in runs], 2)]
        tooled = [r for r in runs if "cpu_s" in r]
        if tooled:
            per_sample[name] = statistics.median(r["us_per_sample"] for r in tooled)
            loop = [r["loop_ms_per_s"] for r in tooled if "loop_ms_per_s" in r]
            if loop:
                per_second[name] = statistics.median(loop)
            row += [median_spread([r["cpu_s"] for r in tooled], 2),
                    median_spread([r["samples"] for r in tooled], 0),
                    median_spread([r["us_per_sample"] for r in tooled], 1),
                    median_spread([r["us_per_non_idle_sample"] for r in tooled], 1),
                    median_spread(loop, 1)]
        else:
            row += ["–"] * 5
        rows.append(row)
    text = [f"### t. The README's training job, {rate} Hz, attached at spawn, whole run "
            f"({load_text})", "",
            f"`examples/train_lm.py --steps {steps} --num-workers 2 --seed 0` (3 processes); "
            "slowdown = 1 − throughput / bare throughput (the job's own samples/s over its "
            "training loop), against the median of the bare runs and, run by run, against the "
            "bare run of the same round; the bare row's spread is what the machine alone moves. "
            "stepscope's samples count every thread each round (idle "
            "ones marked idle); py-spy's only non-idle ones, so the last-but-one column divides "
            "each tool's CPU by its non-idle samples (stepscope's from `export`). Job CPU: the "
            "job's whole tree (wait4), start-up included; the kernel's stack copies for "
            "stepscope --native are charged to it.", "",
            table(["run", "job samples / s", "slowdown % (vs bare's median)",
                   "slowdown % (vs its round's bare)", "job CPU s", "job system CPU s",
                   "tool CPU s",
                   "tool samples",
                   "CPU µs / sample", "CPU µs / non-idle sample",
                   "tool CPU ms / s in the loop"], rows), ""]
    text += cpu_ratio_lines(per_sample, "CPU per sample")
    text += cpu_ratio_lines(per_second, "CPU per second in the loop")
    text += ["Native stacks (stepscope --native):", "", native_rows(results), ""]
    text += refusals(results)
    return "\n".join(text)


# ---------------------------------------------------------------- k. 1 kHz, 30 frames


def bench_deep(all_configs, python, seconds, warmup, rounds, rate, workdir, pins=NO_PINS):
    """Both targets per round: the 30-frame throughput loop (every configuration), then
    deep_stack.py (the tools only)."""
    results = {"throughput": {c.name: [] for c in all_configs},
               "deep_stack": {c.name: [] for c in all_configs if c.kind}}
    duration = seconds + warmup + 1  # covers the target's life; it ends with the target
    for rnd, order in rotations(all_configs, rounds):
        for config in order:
            argv = [python, "-c", DEEP_THROUGHPUT, str(TARGETS), str(seconds), str(warmup)]
            run = run_once(config, argv, rate, workdir, duration, pins=pins)
            target = json.loads(run.pop("stdout").strip().splitlines()[-1])
            run["per_wall_s"], run["per_cpu_s"] = target["per_wall_s"], target["per_cpu_s"]
            run["round"] = rnd
            steady_us(run, warmup + 0.3, warmup + seconds - 0.3)
            results["throughput"][config.name].append(run)
            print(f"  k round {rnd + 1}: {config.name}: {target['per_wall_s']:.0f} it/s"
                  + (f", tool {run['cpu_s']:.3f} s CPU, {run['samples']} samples"
                     if config.kind else "") + f" ({load()})", file=sys.stderr, flush=True)
        for config in order:
            if not config.kind:
                continue
            argv = [python, str(TARGETS / "deep_stack.py"), str(seconds + warmup)]
            run = run_once(config, argv, rate, workdir, duration, pins=pins)
            run.pop("stdout")
            steady_us(run, 1.0, seconds + warmup - 0.5)
            results["deep_stack"][config.name].append(run)
    return results


def steady_us(run, t1, t2):
    """CPU µs per sample between t1 and t2 s of the tool's run, samples estimated from its
    average rate over the run (as sampler_peers.py part a)."""
    trace = run.pop("trace", None)
    if not trace:
        return
    steady = cpu_between(trace, t1, t2)
    if steady and run["samples"]:
        run["steady_ms_per_s"] = steady[0] / 1e6 / steady[1]
        run["steady_us_per_sample"] = steady[0] / 1e3 / (run["samples"] * steady[1] / run["wall_s"])


def report_deep(results, seconds, warmup, rate, load_text):
    text = [f"### k. {rate} Hz on a 30-frame stack, attached at spawn ({load_text})", "",
            "Whole run: the tool's CPU (wait4) over its samples, start-up and write-out "
            "included. Steady: its CPU from /proc between 0.3 s after the warm-up and 0.3 s "
            "before the end (deep_stack.py: 1 s .. end − 0.5 s), per second, and per sample "
            "with the samples in that window estimated from the tool's average rate (as "
            "sampler_peers.py part a). Per CPU s: the loop's iterations over the target's own "
            "CPU time (process_time): what a tool adds to the target's CPU (stepscope's stack "
            "copies in the kernel, py-spy's stops and resumptions), robust to the machine's "
            "load; per s (wall clock): the slowdown the program sees, py-spy's stopped time "
            "included. Target system CPU: wait4's ru_stime of the target's whole life (start-up "
            "included), where the kernel's work on its behalf shows.", ""]
    for target, title in (("throughput", f"bench/targets/throughput.py's loop entered 30 frames "
                                         f"deep, {warmup:g} s warm-up then {seconds:g} s "
                                         "counted"),
                          ("deep_stack", f"bench/targets/deep_stack.py, {seconds + warmup:g} s")):
        runs_of = results[target]
        bare_runs = runs_of.get("bare (no tool)", [])
        bare = statistics.median(r["per_wall_s"] for r in bare_runs) if bare_runs else None
        bare_cpu = statistics.median(r["per_cpu_s"] for r in bare_runs) if bare_runs else None
        rows, per_sample, steady_med, steady_ms = [], {}, {}, {}
        for name, runs in runs_of.items():
            row = [name]
            if target == "throughput":
                speeds = [r["per_wall_s"] for r in runs]
                per_cpu = [r["per_cpu_s"] for r in runs]
                row += [median_spread(speeds, 0, 1e-3), slowdown_cell(speeds, bare),
                        paired_cell(runs, bare_runs, "per_wall_s"),
                        median_spread(per_cpu, 0, 1e-3), slowdown_cell(per_cpu, bare_cpu),
                        median_spread([r["target_sys_s"] * 1e3 for r in runs], 0)]
            tooled = [r for r in runs if "cpu_s" in r]
            if tooled:
                per_sample[name] = statistics.median(r["us_per_sample"] for r in tooled)
                steady = [r["steady_us_per_sample"] for r in tooled if "steady_us_per_sample" in r]
                if steady:
                    steady_med[name] = statistics.median(steady)
                per_s = [r["steady_ms_per_s"] for r in tooled if "steady_ms_per_s" in r]
                if per_s:
                    steady_ms[name] = statistics.median(per_s)
                row += [median_spread([r["us_per_sample"] for r in tooled], 1),
                        median_spread(per_s, 1), median_spread(steady, 1),
                        median_spread([r["samples"] / r["wall_s"] for r in tooled], 0)]
            else:
                row += ["–"] * 4
            rows.append(row)
        header = ["run"] + (["k iterations / s", "slowdown % (vs bare's median)",
                             "slowdown % (vs its round's bare)", "k iterations / CPU s",
                             "slowdown per CPU s %", "target system CPU ms"]
                            if target == "throughput" else [])
        header += ["CPU µs / sample (whole run)", "CPU ms / s (steady)",
                   "CPU µs / sample (steady, est.)", "samples / s (whole run)"]
        text += [f"{title}:", "", table(header, rows), ""]
        text += cpu_ratio_lines(per_sample, "CPU per sample, whole run")
        text += cpu_ratio_lines(steady_ms, "CPU per second, steady")
        text += ["Native stacks (stepscope --native):", "", native_rows(runs_of), ""]
        text += refusals(runs_of)
    return "\n".join(text)


# ---------------------------------------------------------------- main


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 round, short runs: a smoke run")
    parser.add_argument("--only", default="t,k", help="which parts: t, k or t,k")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of part t")
    parser.add_argument("--k-rounds", type=int, default=5, help="rounds of part k")
    parser.add_argument("--steps", type=int, default=400,
                        help="the training job's steps (part t): 400 is about 12 s of "
                             "training loop on a quiet 2-vCPU VM; a loaded one runs it up to "
                             "25x slower")
    parser.add_argument("--seconds", type=float, default=3.0, help="part k: seconds counted")
    parser.add_argument("--python", default="/usr/bin/python3", help="part k's interpreter")
    parser.add_argument("--stepscope", default=str(ROOT / "build" / "stepscope"))
    parser.add_argument("--no-py-spy", action="store_true",
                        help="leave py-spy out (with --split-cpus it runs the job 6x longer)")
    parser.add_argument("--split-cpus", action="store_true",
                        help="the target on CPU 0, each tool on CPU 1 (taskset)")
    parser.add_argument("--json", help="also write the raw figures here")
    args = parser.parse_args()
    pins = SPLIT_CPUS if args.split_cpus else NO_PINS
    parts = set(args.only.split(","))
    rounds = 1 if args.quick else args.rounds
    all_configs = [c for c in configs(args) if not (args.no_py_spy and c.kind == "py-spy")]
    split = "; the target on CPU 0, each tool on CPU 1" if args.split_cpus else ""
    print(f"## `record --native` against py-spy --native: {os.cpu_count()} CPUs{split}; {load()}\n",
          flush=True)
    raw = {"quick": args.quick, "rounds": rounds, "split_cpus": args.split_cpus}
    with tempfile.TemporaryDirectory(prefix="stepscope-native-bench-") as tmp:
        workdir = Path(tmp)
        if "t" in parts:
            steps = 40 if args.quick else args.steps
            start_load = load()
            results = bench_training(all_configs, steps, rounds, 100, workdir, pins)
            raw["t"] = {"steps": steps, "runs": results}
            print(report_training(results, steps, 100, f"{start_load} → {load()}"), flush=True)
        if "k" in parts:
            seconds, warmup = (1.5 if args.quick else args.seconds), 1.0
            start_load = load()
            k_rounds = 1 if args.quick else args.k_rounds
            results = bench_deep(all_configs, args.python, seconds, warmup, k_rounds, 1000,
                                 workdir, pins)
            raw["k"] = {"seconds": seconds, "warmup": warmup, "rounds": k_rounds,
                        "runs": results}
            print(report_deep(results, seconds, warmup, 1000, f"{start_load} → {load()}"),
                  flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()
