#!/usr/bin/env python3
"""The target's slowdown under `record --native`, read inside one run of it (issue 31,
"Performance": the goal is ≤ 2 % at 100 Hz on the training job, and the same at 1 kHz on a
30-frame stack).

native_peers.py compares whole runs, bare and with each tool; on a VM whose vCPUs change
speed from minute to minute the bare runs alone spread by 20 %, far more than the effect.
Here one long run of the target (the README's training job, examples/train_lm.py
--num-workers 2 printing every step, or with --target deep bench/targets/throughput.py's loop
30 frames deep, counting its iterations every 50 ms) is recorded in blocks: a tool attaches
(`--pid`, `--duration`) for one block, then the target runs bare for one block, then the next
tool, and so on, each round in a rotated order. Each tool block's rate is divided by the mean
of the bare blocks on either side of it. The first --settle seconds of every block are left
out: a tool's start (attaching, reading the libraries' unwind data) is paid once per
recording, not per step, and the target's recovery from the previous block. The figure is
the median of those ratios, with a 90 % bootstrap interval.

The neighbours cancel slow drifts only; the AMD EPYC VM of bench/README.md flips between two
speeds for seconds at a time. --twin runs an identical copy of the target beside it, on the
same CPU, which no tool attaches to: each block's rate is the target's over the twin's, so
the machine's speed cancels, and what is left is what the tool costs the target's own CPU
time (the Python-only sampler, which reads the target's memory from another CPU, is the
check: it reads about 0).

--split-cpus pins the target (and its DataLoader workers, and the twin) to CPU 0 and each tool
to CPU 1, as native_peers.py does: the slowdown then is what the tool costs the target's own
processes (the kernel's sampling and stack copies, py-spy's stops), not the share of a CPU a
tool takes on a 2-vCPU VM.

usage: native_slowdown.py [--target job|deep] [--rounds N] [--block S] [--settle S]
                          [--warmup S] [--rate HZ] [--python PY] [--stepscope PATH]
                          [--no-py-spy] [--split-cpus] [--twin] [--json OUT.json]
Python 3 standard library only; helpers from native_peers.py, sampler_peers.py and
hooks_overhead.py (same folder).
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hooks_overhead import paired_bootstrap_interval  # noqa: E402
from native_peers import DEEP_THROUGHPUT, NO_PINS, SPLIT_CPUS, configs, training_argv  # noqa: E402
from sampler_peers import (ROOT, TARGETS, load, neighbour_ratios, phase_rates,  # noqa: E402
                           rotations, table, wait_with_usage)

BATCH = 16  # train_lm.py's default batch size: samples a step


class Target:
    """A target process (and its children) in a session of its own: `proc`."""

    def kill(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


class TrainingJob(Target):
    """The README's training job, printing every step; a thread notes when each step's line
    reaches us."""

    name = "the training job (examples/train_lm.py --num-workers 2)"
    unit, per_count = "samples/s", BATCH

    def __init__(self, args, pins):
        self.proc = subprocess.Popen(pins[0] + training_argv(10 ** 6) + ["--log-every", "1"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        self.times = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stdout:
            if line.startswith(b"step "):
                self.times.append(time.monotonic())

    def wait_ready(self, seconds):
        """Until the job has stepped for `seconds` (its start-up, BPE training, the workers)."""
        deadline = time.monotonic() + 300
        while not self.times or time.monotonic() - self.times[0] < seconds:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the training job did not step (exit status {self.proc.poll()})")
            time.sleep(0.1)

    def progress(self):
        return f"{len(self.times)} steps"

    def finish(self, seconds):
        """After `seconds` more: ends the job; returns its windows [(start, end, 1 step)]."""
        time.sleep(seconds)
        self.kill()
        times = list(self.times)
        return [(a, b, 1) for a, b in zip(times, times[1:])]


class DeepLoop(Target):
    """bench/targets/throughput.py's loop 30 frames deep (native_peers.py's part k),
    counting its own iterations in windows of 50 ms, for as long as the blocks take."""

    name = "a 30-frame Python loop (bench/targets/throughput.py)"
    unit, per_count = "iterations/s", 1

    def __init__(self, args, pins, tools):
        blocks = args.rounds * len(tools)
        # Ends after the last bare block: each tool's block takes up to 2.5 s more than asked
        # (its start, its file's last commit); the blocks wait for the loop's end, not it for them.
        seconds = blocks * (2 * args.block + 2.5) + args.block
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            pins[0] + [args.python, "-c", DEEP_THROUGHPUT, str(TARGETS), str(seconds),
                       str(args.warmup), "0.05"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)

    def wait_ready(self, seconds):
        time.sleep(max(0.0, self.started + seconds + 0.5 - time.monotonic()))

    def progress(self):
        return ""

    def finish(self, seconds):
        stdout, _ = self.proc.communicate()
        if self.proc.returncode != 0:
            raise RuntimeError(f"the loop exited with {self.proc.returncode}")
        return [tuple(w) for w in json.loads(stdout.strip().splitlines()[-1])["windows"]]


def run_tool(config, pid, rate, seconds, workdir, pins):
    """One block with `config` attached: returns the tool's CPU seconds over its wall seconds."""
    tag = config.name.replace(" ", "_")
    out = str(workdir / (tag + (".db" if config.kind == "stepscope" else ".txt")))
    if os.path.exists(out):
        os.unlink(out)
    with open(workdir / f"{tag}.stderr", "wb") as err:
        started = time.monotonic()
        tool = subprocess.Popen(pins[1] + config.argv(pid, rate, out, seconds),
                                stdout=subprocess.DEVNULL, stderr=err)
    cpu_s = wait_with_usage(tool, seconds + 60)
    wall_s = time.monotonic() - started
    if tool.returncode != 0:
        stderr = (workdir / f"{tag}.stderr").read_text(errors="replace")
        raise RuntimeError(f"{config.name} exited with {tool.returncode}: {stderr[-800:]}")
    return cpu_s / wall_s


def record_blocks(target, twin, tools, args, workdir, pins):
    """Runs the target (and its twin, if any) once through every round's blocks (bare
    between any two tools); returns the target's and the twin's windows, the phases
    [(start, tool name or None)] and each tool's CPU."""
    phases, cpu = [], {tool.name: [] for tool in tools}
    try:
        target.wait_ready(args.warmup)
        if twin:
            twin.wait_ready(0)
        for rnd, order in rotations(tools, args.rounds):
            for tool in order:
                phases.append((time.monotonic(), None))
                time.sleep(args.block)
                phases.append((time.monotonic(), tool.name))
                cpu[tool.name].append(run_tool(tool, target.proc.pid, args.rate, args.block,
                                               workdir, pins))
            print(f"  round {rnd + 1} of {args.rounds}: {target.progress()} ({load()})",
                  file=sys.stderr, flush=True)
        phases.append((time.monotonic(), None))
        windows = target.finish(args.block)
        phases.append((time.monotonic(), None))  # the last bare block's end
        twin_windows = twin.finish(0) if twin else None
    finally:
        target.kill()
        if twin:
            twin.kill()
    return windows, twin_windows, phases, cpu


def report(target, tools, windows, twin_windows, phases, cpu, args):
    rates = phase_rates(windows, phases, guard=args.settle)
    bare_rate = statistics.median(rate for label, rate in rates if label is None and rate)
    if twin_windows:  # the target's rate over its twin's in the same phase
        rates = [(label, mine / theirs if mine and theirs else None) for (label, mine), (_, theirs)
                 in zip(rates, phase_rates(twin_windows, phases, guard=args.settle))]
    ratios = neighbour_ratios(rates)
    rows = []
    for tool in tools:
        slowdowns = [100 * (1 - r) for label, r in ratios if label == tool.name]
        if not slowdowns:
            rows.append([tool.name, "–", "–", "–", "–"])
            continue
        low, high = paired_bootstrap_interval(slowdowns, statistics.median)
        rows.append([tool.name, len(slowdowns), f"{statistics.median(slowdowns):+.2f}",
                     f"{low:+.2f} … {high:+.2f}",
                     f"{statistics.median(cpu[tool.name]):.3f}"])
    pinned = "; target on CPU 0, tools on CPU 1" if args.split_cpus else ""
    pinned += "; each block's rate over a twin's beside it" if args.twin else ""
    return "\n".join([
        f"{target.name[0].upper()}{target.name[1:]}, one run: {args.rounds} rounds of "
        f"{args.block:g} s blocks, tools at {args.rate} Hz, the first {args.settle:g} s of each "
        f"block left out{pinned} ({load()}). Bare blocks' median: {bare_rate * target.per_count:.1f} {target.unit}.",
        "",
        table(["tool", "blocks", "slowdown % (median)", "90 % interval",
               "tool CPU s a second (median)"], rows),
        ""])


def end_on_sigterm(signum, frame):
    raise SystemExit(128 + signum)  # through record_blocks' finally: the target and twin end too


def main():
    signal.signal(signal.SIGTERM, end_on_sigterm)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", choices=("job", "deep"), default="job",
                        help="the training job, or a 30-frame Python loop (say --rate 1000)")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--block", type=float, default=5.0, help="seconds a block")
    parser.add_argument("--settle", type=float, default=1.5,
                        help="seconds left out at each block's start")
    parser.add_argument("--warmup", type=float, default=5.0,
                        help="seconds the target runs before the first block")
    parser.add_argument("--rate", type=int, default=100)
    parser.add_argument("--python", default="/usr/bin/python3", help="the deep loop's interpreter")
    parser.add_argument("--stepscope", default=str(ROOT / "build" / "stepscope"))
    parser.add_argument("--no-py-spy", action="store_true")
    parser.add_argument("--split-cpus", action="store_true",
                        help="the target on CPU 0, the tools on CPU 1")
    parser.add_argument("--twin", action="store_true",
                        help="a second copy of the target beside it, which no tool attaches to: each "
                             "block's rate is the target's over the twin's")
    parser.add_argument("--json", help="also write the raw figures here")
    args = parser.parse_args()
    tools = [c for c in configs(args, bare=False) if not (args.no_py_spy and c.kind == "py-spy")]
    pins = SPLIT_CPUS if args.split_cpus else NO_PINS
    start = (lambda: TrainingJob(args, pins)) if args.target == "job" else (
        lambda: DeepLoop(args, pins, tools))
    target = start()
    twin = start() if args.twin else None
    with tempfile.TemporaryDirectory(prefix="native-slowdown-") as tmp:
        windows, twin_windows, phases, cpu = record_blocks(target, twin, tools, args, Path(tmp), pins)
    print(report(target, tools, windows, twin_windows, phases, cpu, args))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"windows": windows, "twin_windows": twin_windows, "phases": phases,
                       "tool_cpu_per_s": cpu}, f)


if __name__ == "__main__":
    main()
