#!/usr/bin/env python3
"""stepscope's Python stack sampler side by side with py-spy and Austin.

One run, same targets, tools interleaved (A B C, B C A, ...) so that a change in
the machine's load hits every tool alike. Four measurements, one Markdown table
each (figures and how to read them: bench/README.md):

  a. recorder CPU time per sample on a 30-frame stack at 1 kHz (attach mode),
     with the floors: one bare process_vm_readv of the same bytes, a /proc stat
     read, and one timer wakeup (bench/floor_process_vm_readv.cpp); with --same-cpu,
     the target and every tool pinned to CPU 0 (a sampler's wakeup then finds its
     CPU busy, which on a VM spares it the exit of waking an idle vCPU);
  b. accuracy on tests/integration/programs/known_split.py (launch mode);
  c. the highest sustained sampling rate;
  d. the target's slowdown at 100 Hz: its own loop throughput while sampled and
     while the sampler is paused, alternating every 0.2 s;
  t. (only when asked: --only t, needs the .venv's torch) the recorder's CPU per
     second attached at 100 Hz to the README's example training job (a main
     process and 2 DataLoader workers, most of their threads waiting), whole tree;
  p. (only when asked: --only p, needs perf) where stepscope's own CPU goes.

usage: sampler_peers.py [--quick] [--only a,b,c,d,t,p] [--tools stepscope,py-spy,austin]
                        [--stepscope PATH] [--baseline PATH] [--same-cpu]
                        [--python PYTHON] [--json OUT.json]
Python 3 standard library only.
"""
import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = ROOT / "bench" / "targets"
KNOWN_SPLIT = ROOT / "tests" / "integration" / "programs" / "known_split.py"
TRAINING_JOB = ROOT / "examples" / "train_lm.py"
FLOOR_SOURCE = ROOT / "bench" / "floor_process_vm_readv.cpp"
VENV_BIN = ROOT / ".venv" / "bin"

# ---------------------------------------------------------------- the samplers


class Sampler:
    """How to run one tool, and how to read what it wrote."""

    name = ""

    def __init__(self, exe):
        self.exe = str(exe)

    def attach(self, pid, rate, seconds, out):
        raise NotImplementedError

    def attach_tree(self, pid, rate, seconds, out):
        """attach(), following the process's children too."""
        raise NotImplementedError

    def launch(self, command, rate, out):
        raise NotImplementedError

    def samples(self, out, stderr):
        """Samples actually taken."""
        return sum(count for _, count in self.stacks(out))

    def stacks(self, out):
        """(function names root to leaf, count) per recorded stack."""
        raise NotImplementedError


def folded_stacks(path, function_of):
    """Parses folded stacks, 'frame;frame;... COUNT' per line."""
    with open(path, errors="replace") as lines:
        for line in lines:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if stack and count.isdigit():
                yield [function_of(frame) for frame in stack.split(";")], int(count)


def function_of_label(frame):
    """'function (file:line)', the label of py-spy and stepscope's collapsed output."""
    return frame.rsplit(" (", 1)[0]


class Stepscope(Sampler):
    name = "stepscope"
    SUMMARY = re.compile(r"recorded ([\d.]+) s: (\d+) samples in (\d+) rounds \(([\d.]+) Hz\)")

    def attach(self, pid, rate, seconds, out):
        return [self.exe, "record", "-o", out, "--rate", str(rate), "--duration", str(seconds),
                "--pid", str(pid)]

    def attach_tree(self, pid, rate, seconds, out):
        return self.attach(pid, rate, seconds, out)  # the whole tree always

    def launch(self, command, rate, out):
        return [self.exe, "record", "-o", out, "--rate", str(rate), "--"] + command

    def summary(self, stderr):
        match = self.SUMMARY.search(stderr)
        if not match:
            raise RuntimeError(f"no summary line from stepscope: {stderr[-500:]!r}")
        return {"seconds": float(match[1]), "samples": int(match[2]), "rounds": int(match[3]),
                "hz": float(match[4])}

    def samples(self, out, stderr):
        return self.summary(stderr)["samples"]

    def stacks(self, out):
        folded = out + ".collapsed"
        subprocess.run([self.exe, "export", out, "--format", "collapsed", "-o", folded], check=True)
        return folded_stacks(folded, function_of_label)


class PySpy(Sampler):
    name = "py-spy"

    def attach(self, pid, rate, seconds, out):
        return [self.exe, "record", "--nonblocking", "--rate", str(rate), "--duration",
                str(seconds), "--format", "raw", "-o", out, "--pid", str(pid)]

    def attach_tree(self, pid, rate, seconds, out):
        return self.attach(pid, rate, seconds, out) + ["--subprocesses"]

    def launch(self, command, rate, out):
        return [self.exe, "record", "--nonblocking", "--rate", str(rate), "--format", "raw",
                "-o", out, "--"] + command

    def stacks(self, out):
        return folded_stacks(out, function_of_label)


class Austin(Sampler):
    """Austin in CPU mode (-s: idle samples left out, as py-spy and stepscope do by
    default); each sample is one line 'P<pid>;T<iid>:<tid>;file:function:line;... METRIC'."""

    name = "austin"

    def attach(self, pid, rate, seconds, out):
        return [self.exe, "-s", "-i", f"{round(1e6 / rate)}us", "-x", str(seconds), "-o", out,
                "-p", str(pid)]

    def attach_tree(self, pid, rate, seconds, out):
        return [self.exe, "-C"] + self.attach(pid, rate, seconds, out)[1:]

    def launch(self, command, rate, out):
        return [self.exe, "-s", "-i", f"{round(1e6 / rate)}us", "-o", out] + command

    def stacks(self, out):
        with open(out, errors="replace") as lines:
            for line in lines:
                if not line.startswith("P"):
                    continue  # '# metadata' and blank lines
                stack = line.rstrip("\n").rpartition(" ")[0]
                frames = stack.split(";")[2:]
                yield [frame.rsplit(":", 2)[-2] if frame.count(":") >= 2 else frame
                       for frame in frames], 1


def find_samplers(args):
    wanted = args.tools.split(",")
    candidates = {
        "stepscope": (Stepscope, Path(args.stepscope)),
        "py-spy": (PySpy, VENV_BIN / "py-spy"),
        "austin": (Austin, VENV_BIN / "austin"),
    }
    samplers = []
    for name in wanted:
        kind, path = candidates[name]
        exe = path if path.exists() else shutil.which(name)
        if exe is None:
            print(f"note: {name} not found ({path}); left out", file=sys.stderr)
            continue
        samplers.append(kind(exe))
    if args.baseline:
        # An earlier build, interleaved with the others: a before/after under the same load.
        baseline = Stepscope(args.baseline)
        baseline.name = "stepscope (before)"
        samplers.append(baseline)
    return samplers


# ---------------------------------------------------------------- helpers


def rotations(items, reps):
    """A B C, B C A, C A B, ...: each item in each position as evenly as possible."""
    for rep in range(reps):
        k = rep % len(items)
        yield rep, items[k:] + items[:k]


def task_cpu_ns(pid):
    """CPU time of all threads of `pid` so far, from schedstat (nanoseconds)."""
    total = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
            except (OSError, ValueError, IndexError):
                pass
    except OSError:
        pass
    return total


# Part a with --same-cpu: the target and every tool on CPU 0, so that a tool's wakeup
# finds its CPU busy rather than idle (on a VM, waking an idle vCPU costs an exit).
PIN_TO_CPU_0 = ["taskset", "-c", "0"]


def run_measured(argv, workdir, window=None):
    """Runs argv to its end. Returns its CPU seconds (cpu_s, from wait4's rusage),
    wall-clock seconds (wall_s), stderr and, when window=(t1, t2) is given, the
    CPU nanoseconds it used between t1 and t2 seconds after its start (window_ns,
    read from /proc while it runs)."""
    with open(workdir / "stdout", "wb") as out, open(workdir / "stderr", "wb") as err:
        start = time.monotonic()
        proc = subprocess.Popen(argv, stdout=out, stderr=err)
        window_ns = None
        if window:
            readings = []
            for mark in window:
                time.sleep(max(0.0, start + mark - time.monotonic()))
                readings.append(task_cpu_ns(proc.pid))
            window_ns = readings[1] - readings[0]
        _, status, usage = os.wait4(proc.pid, 0)
        wall_s = time.monotonic() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
    stderr = (workdir / "stderr").read_text(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited with {proc.returncode}: {stderr[-800:]}")
    return {"cpu_s": usage.ru_utime + usage.ru_stime, "wall_s": wall_s, "stderr": stderr,
            "window_ns": window_ns}


def start_target(*argv):
    proc = subprocess.Popen([str(arg) for arg in argv], stdout=subprocess.PIPE, text=True)
    return proc


def stop(proc):
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def median_spread(values, digits=1, scale=1.0):
    """'median (min–max, n=N)'."""
    if not values:
        return "–"
    values = [v * scale for v in values]
    med = statistics.median(values)
    if len(values) == 1:
        return f"{med:.{digits}f}"
    low, high = min(values), max(values)
    return f"{med:.{digits}f} ({low:.{digits}f}–{high:.{digits}f}, n={len(values)})"


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def ratio_lines(medians, label="", goal=""):
    """stepscope's median over the best peer's, and over the baseline's when one ran."""
    text = []
    peers = {n: v for n, v in medians.items() if not n.startswith("stepscope")}
    if "stepscope" in medians and peers:
        best = min(peers, key=peers.get)
        text += [f"stepscope / best peer ({best}){label}: {medians['stepscope'] / peers[best]:.2f}{goal}",
                 ""]
    if "stepscope" in medians and "stepscope (before)" in medians:
        text += [f"stepscope / stepscope (before){label}: "
                 f"{medians['stepscope'] / medians['stepscope (before)']:.2f}", ""]
    return text


def load():
    return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


# ---------------------------------------------------------------- a. CPU per sample


def build_floor(workdir):
    exe = workdir / "floor"
    compiler = os.environ.get("CXX", "g++")
    subprocess.run([compiler, "-O2", "-std=c++20", "-o", str(exe), str(FLOOR_SOURCE)], check=True)
    return exe


def measure_floor(workdir, pin=()):
    exe = build_floor(workdir)
    # 8 B: the bare call; 4704 B: what stepscope reads per sample of this stack on 3.11.
    result = subprocess.run([*pin, str(exe), "8", "4096", "4704"], check=True,
                            capture_output=True, text=True)
    return json.loads(result.stdout)


def cpu_per_sample_once(sampler, pid, seconds, rate, workdir, pin=()):
    out = str(workdir / f"{sampler.name}.out")
    window = (1.0, seconds - 0.5) if seconds >= 3 else None
    run = run_measured([*pin, *sampler.attach(pid, rate, seconds, out)], workdir, window)
    samples = sampler.samples(out, run["stderr"])
    row = {"cpu_s": run["cpu_s"], "wall_s": run["wall_s"], "samples": samples,
           "us_per_sample": run["cpu_s"] * 1e6 / max(samples, 1)}
    if run["window_ns"] is not None and samples:
        # Samples in the window, assuming the tool's own average rate over the run.
        in_window = samples * (window[1] - window[0]) / run["wall_s"]
        row["steady_us_per_sample"] = run["window_ns"] / 1e3 / in_window
    return row


# The floors timed in CPU time; the others are timed by the wall clock, which on a
# CPU shared with the spinning target counts the target's time too.
CPU_TIMED_FLOORS = ("sleep_1ms_wakeup_cpu_us", "sleep_10ms_wakeup_cpu_us",
                    "timer_set_ahead_1ms_wakeup_cpu_us",
                    "six_range_read_warm_us", "six_range_read_after_1ms_sleep_us")


def bench_cpu_per_sample(samplers, python, seconds, reps, rate, workdir, pin=()):
    """pin: a taskset prefix for the target and every tool (--same-cpu), or nothing.
    Returns the runs per tool and, when pinned, the floors timed in CPU time as
    measured on the target's busy CPU, as the tools run."""
    target = start_target(*pin, python, TARGETS / "deep_stack.py")
    time.sleep(0.5)  # past the interpreter's start-up, deep in its stack
    results = {s.name: [] for s in samplers}
    floor = None
    try:
        if pin:
            pinned = measure_floor(workdir, pin)
            floor = {key.replace("_us", "_beside_the_target_on_cpu_0_us"): pinned[key]
                     for key in CPU_TIMED_FLOORS if key in pinned}
        for _, order in rotations(samplers, reps):
            for sampler in order:
                results[sampler.name].append(
                    cpu_per_sample_once(sampler, target.pid, seconds, rate, workdir, pin))
    finally:
        stop(target)
    return results, floor


def report_cpu_per_sample(results, floor, rate, seconds, load_text, same_cpu=False):
    rows, medians = [], {}
    for name, runs in results.items():
        per = [r["us_per_sample"] for r in runs]
        steady = [r["steady_us_per_sample"] for r in runs if "steady_us_per_sample" in r]
        medians[name] = statistics.median(per)
        rows.append([name, median_spread(per), median_spread(steady),
                     median_spread([r["samples"] / r["wall_s"] for r in runs], 0),
                     median_spread([r["cpu_s"] * 1e3 for r in runs], 0)])
    placement = "target and tools all on CPU 0; " if same_cpu else ""
    text = [f"### a. Recorder CPU time per sample: 30-frame stack, {rate} Hz, {seconds} s attach "
            f"({placement}{load_text})", "",
            table(["sampler", "CPU µs / sample (whole run)", "CPU µs / sample (steady, "
                   "1 s..end−0.5 s)", "samples / s of wall time", "CPU ms per run"], rows), ""]
    text += ratio_lines(medians, goal=" (goal ≤ 0.33, and ≤ 20 µs)")
    if floor:
        text += ["Floors (bench/floor_process_vm_readv.cpp, median of batches, warm loop):", "",
                 table(["operation", "µs"], [[k.replace("_us", ""), f"{v:.2f}"]
                                             for k, v in floor.items()]), ""]
    return "\n".join(text)


# ---------------------------------------------------------------- t. a training job


def bench_training_job(samplers, seconds, reps, rate, workdir):
    """Each tool attached in turn, whole tree, to the README's example job."""
    python = VENV_BIN / "python"
    target = start_target(python, TRAINING_JOB, "--num-workers", "2", "--steps", "1000000",
                          "--log-every", "1000000")
    time.sleep(12)  # past torch's import, the tokenizer's training and the first steps
    results = {s.name: [] for s in samplers}
    try:
        if target.poll() is not None:
            raise RuntimeError("the training job did not start (is torch in .venv?)")
        for _, order in rotations(samplers, reps):
            for sampler in order:
                out = str(workdir / f"{sampler.name}.out")
                window = (1.0, seconds - 0.5)
                run = run_measured(sampler.attach_tree(target.pid, rate, seconds, out), workdir,
                                   window)
                results[sampler.name].append({
                    "cpu_s": run["cpu_s"], "wall_s": run["wall_s"],
                    "steady_ms_per_s": run["window_ns"] / 1e6 / (window[1] - window[0]),
                    "samples": sampler.samples(out, run["stderr"])})
    finally:
        stop(target)
        for child in subprocess.run(["pgrep", "-f", str(TRAINING_JOB)], capture_output=True,
                                    text=True).stdout.split():
            os.kill(int(child), signal.SIGKILL)  # its DataLoader workers
    return results


def report_training_job(results, rate, seconds, load_text):
    rows, medians = [], {}
    for name, runs in results.items():
        per_second = [r["cpu_s"] * 1e3 / r["wall_s"] for r in runs]
        steady = [r["steady_ms_per_s"] for r in runs]
        medians[name] = statistics.median(steady)
        rows.append([name, median_spread(per_second), median_spread(steady),
                     median_spread([r["samples"] / r["wall_s"] for r in runs], 0)])
    text = [f"### t. The README's example training job: {rate} Hz, {seconds} s attach, whole tree "
            f"({load_text})", "",
            "examples/train_lm.py --num-workers 2: 3 processes, 9 Python threads, most of them "
            "waiting. py-spy with --subprocesses, Austin with -C; py-spy and Austin (-s) leave idle "
            "threads' samples out, stepscope keeps them marked idle.", "",
            table(["sampler", "recorder CPU ms per s (whole run)",
                   "recorder CPU ms per s (steady, 1 s..end−0.5 s)", "samples / s"], rows), ""]
    text += ratio_lines(medians, label=", steady")
    return "\n".join(text)


# ---------------------------------------------------------------- b. accuracy


def truth_of(stdout):
    for line in reversed(stdout.splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and "heavy" in value:
            return value["heavy"]
    raise RuntimeError(f"known_split.py printed no truth: {stdout[-300:]!r}")


def measured_heavy_share(sampler, out):
    heavy = light = 0
    for functions, count in sampler.stacks(out):
        if "heavy" in functions:
            heavy += count
        elif "light" in functions:
            light += count
    return heavy, light


def accuracy_once(sampler, python, rate, seconds, workdir):
    out = str(workdir / f"{sampler.name}-split.out")
    command = [python, str(KNOWN_SPLIT), str(seconds)]
    result = subprocess.run(sampler.launch(command, rate, out), capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{sampler.name} on known_split: {result.stderr[-800:]}")
    truth = truth_of(result.stdout)
    heavy, light = measured_heavy_share(sampler, out)
    n = heavy + light
    share = heavy / n if n else float("nan")
    return {"truth": truth, "measured": share, "samples": n,
            "error_pp": abs(share - truth) * 100,
            "expected_sd_pp": (truth * (1 - truth) / max(n, 1)) ** 0.5 * 100}


def bench_accuracy(samplers, python, plan, reps, workdir):
    results = {}
    for rate, seconds in plan:
        results[rate] = {s.name: [] for s in samplers}
        for _, order in rotations(samplers, reps):
            for sampler in order:
                results[rate][sampler.name].append(
                    accuracy_once(sampler, python, rate, seconds, workdir))
    return results


def report_accuracy(results, plan, load_text):
    rows = []
    for rate, seconds in plan:
        for name, runs in results[rate].items():
            rows.append([f"{rate} Hz, {seconds} s", name,
                         median_spread([r["error_pp"] for r in runs], 2),
                         median_spread([r["measured"] for r in runs], 1, 100),
                         median_spread([r["truth"] for r in runs], 1, 100),
                         median_spread([r["samples"] for r in runs], 0),
                         f"{statistics.median(r['expected_sd_pp'] for r in runs):.2f}"])
    return "\n".join([f"### b. Accuracy on known_split.py, launch mode ({load_text})", "",
                      table(["rate", "sampler", "abs. error (pp)", "measured heavy %",
                             "true heavy %", "samples (heavy+light)",
                             "sampling sd (pp)"], rows), "",
                      "Share of `heavy` among samples in `heavy` or `light`; truth from the "
                      "program's own process_time(). Sampling sd = √(p(1−p)/n): errors of "
                      "that size are chance.", ""])


# ---------------------------------------------------------------- c. highest rate


def effective_rate_once(sampler, pid, rate, seconds, workdir):
    out = str(workdir / f"{sampler.name}-rate.out")
    run = run_measured(sampler.attach(pid, rate, seconds, out), workdir)
    # Over the process's whole wall time, start-up included, the same way for all
    # (py-spy takes as long as it needs to collect rate × duration samples).
    samples = sampler.samples(out, run["stderr"])
    return {"asked": rate, "hz": samples / run["wall_s"], "samples": samples,
            "wall_s": run["wall_s"], "cpu_s": run["cpu_s"]}


def bench_highest_rate(samplers, python, rates, seconds, workdir):
    target = start_target(python, TARGETS / "deep_stack.py")
    time.sleep(0.5)
    results = {s.name: [] for s in samplers}
    try:
        for rate in rates:
            for _, order in rotations(samplers, 1):
                for sampler in order:
                    results[sampler.name].append(
                        effective_rate_once(sampler, target.pid, rate, seconds, workdir))
    finally:
        stop(target)
    return results


def report_highest_rate(results, rates, seconds, load_text):
    rows = []
    for name, runs in results.items():
        cells = [f"{r['hz']:.0f} ({100 * r['hz'] / r['asked']:.0f}%, "
                 f"{r['cpu_s'] / r['wall_s']:.2f} CPU)" for r in runs]
        sustained = [r["asked"] for r in runs if r["hz"] >= 0.95 * r["asked"]]
        rows.append([name] + cells + [f"{max(sustained)} Hz" if sustained else "–"])
    return "\n".join([f"### c. Effective rate, 30-frame stack, {seconds} s each ({load_text})", "",
                      table(["sampler"] + [f"asked {r} Hz" for r in rates] +
                            ["highest with ≥ 95%"], rows), "",
                      "Each cell: samples per second of the sampler's whole run (start-up "
                      "included), % of the rate asked, and the CPUs the sampler kept busy.", ""])


# ---------------------------------------------------------------- d. slowdown


def wait_with_usage(proc, timeout):
    """Waits for proc (killing it after `timeout` s); returns its CPU seconds."""
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            return usage.ru_utime + usage.ru_stime
        if time.monotonic() > deadline:
            proc.kill()
            deadline = float("inf")
        time.sleep(0.01)


def alternate(recorder, target, first, phase):
    """Pauses (SIGSTOP) and resumes (SIGCONT) the recorder in alternate phases of
    `phase` s from monotonic time `first` until the target exits; with no
    recorder, only notes the phases. Returns [(start, sampling?)] per phase."""
    phases, on = [], True
    time.sleep(max(0.0, first - time.monotonic()))
    next_switch = time.monotonic()
    while target.poll() is None:
        if recorder is not None:
            os.kill(recorder.pid, signal.SIGCONT if on else signal.SIGSTOP)
        phases.append((time.monotonic(), on))
        on = not on
        next_switch += phase
        time.sleep(max(0.0, next_switch - time.monotonic()))
    if recorder is not None:
        os.kill(recorder.pid, signal.SIGCONT)  # so that it can see the target gone
    return phases


def throughput_phased(sampler, python, seconds, warmup, phase, same_cpu, workdir):
    """One run of the throughput target with `sampler` attached at 100 Hz all along,
    sampling in every other phase (paused in between); None: the control, phases
    only noted. same_cpu: target and sampler pinned to CPU 0."""
    pin = ["taskset", "-c", "0"] if same_cpu else []
    target = subprocess.Popen(pin + [python, str(TARGETS / "throughput.py"), str(seconds),
                                     str(warmup), "0.05"], stdout=subprocess.PIPE, text=True)
    started = time.monotonic()
    recorder = None
    try:
        if sampler is not None:
            argv = sampler.attach(target.pid, 100, int(seconds + warmup + 3),
                                  str(workdir / f"{sampler.name}-slow.out"))
            recorder = subprocess.Popen(pin + argv, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        phases = alternate(recorder, target, started + warmup, phase)
        stdout, _ = target.communicate(timeout=30)
    finally:
        stop(target)
        if recorder is not None and recorder.returncode is None:
            os.kill(recorder.pid, signal.SIGCONT)
    result = json.loads(stdout.strip().splitlines()[-1])
    result["phases"] = phases
    if recorder is not None:
        result["sampler_cpu_s"] = wait_with_usage(recorder, 10)  # each stops with its target
        result["sampling_s"] = sum(phase for _, on in phases if on)
    return result


def phase_rates(windows, phases, guard=0.02):
    """[(the phase's label, counts a second in it)]: a phase's label is falsy while
    paused, else what it ran (True, or a tool's name). Windows that straddle a switch,
    or start within `guard` s after one, are left out; None where too little is left."""
    bounds = [start for start, _ in phases] + [float("inf")]
    rates = []
    for i, (start, label) in enumerate(phases):
        inside = [w for w in windows if w[0] >= start + guard and w[1] <= bounds[i + 1]]
        seconds = sum(w[1] - w[0] for w in inside)
        rates.append((label, sum(w[2] for w in inside) / seconds if seconds > 0.02 else None))
    return rates


def neighbour_ratios(rates):
    """[(label, ratio)]: the rate of each sampling phase over the mean of the paused phases
    on either side of it, which cancels slow drifts of the machine's speed."""
    ratios = []
    for i in range(1, len(rates) - 1):
        (before_on, before), (label, here), (after_on, after) = rates[i - 1], rates[i], rates[i + 1]
        if label and not before_on and not after_on and None not in (before, here, after):
            ratios.append((label, here / ((before + after) / 2)))
    return ratios


def phase_ratios(windows, phases, guard=0.02):
    return neighbour_ratios(phase_rates(windows, phases, guard))


def bench_slowdown(samplers, python, seconds, warmup, phase, workdir):
    results = {}
    for same_cpu in (False, True):
        for sampler in [None] + samplers:
            name = ("control (no sampler)" if sampler is None else sampler.name) + (
                ", same CPU" if same_cpu else "")
            results[name] = throughput_phased(sampler, python, seconds, warmup, phase, same_cpu,
                                              workdir)
    return results


def report_slowdown(results, seconds, phase, load_text):
    rows = []
    for name, run in results.items():
        ratios = [ratio for _, ratio in phase_ratios(run["windows"], run["phases"])]
        mean = statistics.fmean(ratios) if ratios else float("nan")
        se = statistics.stdev(ratios) / len(ratios) ** 0.5 if len(ratios) > 1 else float("nan")
        share = (f"{100 * run['sampler_cpu_s'] / run['sampling_s']:.2f}"
                 if "sampler_cpu_s" in run else "–")
        rows.append([name, f"{run['per_wall_s'] / 1e3:.0f}", f"{mean:.4f} ± {2 * se:.4f}",
                     median_spread(ratios, 3), share])
    return "\n".join([
        f"### d. Target throughput at 100 Hz: sampling {phase} s, paused {phase} s, for "
        f"{seconds:g} s per run ({load_text})", "",
        table(["run", "k iterations / s", "sampling / paused: mean ± 2 SE",
               "median (min–max, n)", "sampler CPU, % of one core while sampling"], rows), "",
        "Each sampler stays attached to one run of bench/targets/throughput.py and is paused "
        "(SIGSTOP) and resumed (SIGCONT) in alternate phases; the ratio compares the target's "
        "throughput in each sampling phase with the mean of the paused phases on either side. "
        "Below 1 is a slowdown; the goal is above 0.99. The control notes the same phases "
        "with no sampler: its spread is the resolution of the method on this machine. "
        "`same CPU`: target and sampler pinned to one CPU (taskset), the worst case, where "
        "every microsecond the sampler runs is taken from the target.", ""])


# ---------------------------------------------------------------- p. where stepscope's time goes

# Inclusive shares of these functions in a perf profile of the recorder. Names
# depend on inlining; a line that is not found is left out of the table.
PROFILE_PARTS = [
    # By system call: the kernel's own call chains, reliable.
    ("__x64_sys_process_vm_readv", "syscall: process_vm_readv (all of them)"),
    ("__x64_sys_rt_sigtimedwait", "syscall: rt_sigtimedwait (the sleep and wakeup)"),
    ("__x64_sys_pread64", "syscall: pread64 (/proc files: thread state, monitor, tree scan)"),
    ("__x64_sys_getdents64", "syscall: getdents64 (task folders)"),
    ("__x64_sys_openat", "syscall: openat (/proc files)"),
    ("__x64_sys_fdatasync", "syscall: fdatasync (the commit's journal)"),
    # By stepscope function: user stacks unwound from DWARF, may under-count.
    ("stepscope::PythonProcess::sample", "stepscope: PythonProcess::sample (stack read)"),
    ("stepscope::python::StackReader::resolve_frames", "stepscope: code cache and line numbers"),
    ("stepscope::ThreadStateReader::read", "stepscope: ThreadStateReader::read (thread state, every sample)"),
    ("stepscope::SignalRelay::wait_until", "stepscope: SignalRelay::wait_until (the sleep, every round)"),
    ("stepscope::Sampler::intern_stack", "stepscope: Sampler::intern_stack"),
    ("stepscope::SysmonSource::poll", "stepscope: SysmonSource::poll (system monitor, 10 Hz)"),
    ("stepscope::RunWriter::commit", "stepscope: RunWriter::commit (SQLite, once a second)"),
    ("stepscope::Sampler::scan_tree", "stepscope: Sampler::scan_tree (every 50 ms)"),
]


def bench_profile(sampler, python, seconds, rate, workdir):
    """Records stepscope under `perf record --call-graph dwarf` while it samples the
    30-frame target; returns (label, % of recorder CPU, µs per sample) rows."""
    target = start_target(python, TARGETS / "deep_stack.py")
    time.sleep(0.5)
    data = str(workdir / "perf.data")
    out = str(workdir / "profiled.db")
    try:
        argv = ["perf", "record", "-q", "-F", "4000", "-e", "cpu-clock",
                "--call-graph", "dwarf,16384", "-o", data, "--"]
        argv += sampler.attach(target.pid, rate, seconds, out)
        stderr = run_measured(argv, workdir)["stderr"]
    finally:
        stop(target)
    summary = sampler.summary(stderr)
    report = subprocess.run(["perf", "report", "-i", data, "--children", "--sort", "sym",
                             "--stdio", "-g", "none"], capture_output=True, text=True).stdout
    shares, inlined = {}, {}
    for line in report.splitlines():
        fields = line.split(None, 3)  # children%, self%, [.], symbol
        if len(fields) == 4 and fields[0].endswith("%"):
            # A function perf lists twice (two copies of its code, each with its own
            # callers) counts with both shares; an inlined copy only when it has no other.
            symbol, pct = fields[3].strip(), float(fields[0].rstrip("%"))
            if symbol.endswith(" (inlined)"):
                inlined.setdefault(symbol.removesuffix(" (inlined)"), pct)
            else:
                shares[symbol] = shares.get(symbol, 0) + pct
    for symbol, pct in inlined.items():
        shares.setdefault(symbol, pct)
    # CPU from perf's own count of the recorder's samples (cpu-clock at 4 kHz: 250 µs
    # each); perf's unwinding adds some to what the recorder costs without it.
    counts = subprocess.run(["perf", "report", "-i", data, "--stdio", "-g", "none", "--sort",
                             "comm", "-F", "sample,comm"], capture_output=True, text=True).stdout
    cpu_us = sum(int(line.split()[0]) * 250 for line in counts.splitlines()
                 if line.strip() and not line.startswith("#") and line.split()[0].isdigit())
    rows = []
    for symbol, label in PROFILE_PARTS:
        if symbol in shares:
            pct = shares[symbol]
            rows.append([label, f"{pct:.1f}", f"{pct / 100 * cpu_us / summary['samples']:.1f}"])
    return rows, cpu_us / summary["samples"]


def report_profile(rows, total_us, rate, seconds, load_text):
    return "\n".join([
        f"### p. Where stepscope's time goes: perf, {rate} Hz, {seconds} s ({load_text})", "",
        table(["part", "% of recorder CPU (inclusive)", "µs / sample"], rows), "",
        f"Total under perf: {total_us:.1f} µs of CPU per sample (perf adds some). perf cannot "
        "see inside a virtual machine's exits, so timer wakeups look cheaper here than the "
        "floor measured above.", ""])


# ---------------------------------------------------------------- main


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run")
    parser.add_argument("--only", default="a,b,c,d",
                        help="which parts, e.g. a,d; t (a training job) and p (perf profile of "
                             "stepscope) only if named")
    parser.add_argument("--tools", default="stepscope,py-spy,austin")
    parser.add_argument("--python", default="/usr/bin/python3", help="the targets' interpreter")
    parser.add_argument("--stepscope", default=str(ROOT / "build" / "stepscope"),
                        help="the stepscope binary to measure")
    parser.add_argument("--baseline", help="an earlier stepscope binary, run as a fourth tool")
    parser.add_argument("--json", help="also write the raw figures here")
    parser.add_argument("--same-cpu", action="store_true",
                        help="part a with the target and every tool pinned to CPU 0, and the "
                             "floors timed in CPU time measured there too (default: placed by "
                             "the scheduler)")
    args = parser.parse_args()
    parts = set(args.only.split(","))
    samplers = find_samplers(args)
    quick = args.quick
    python_version = subprocess.run(
        [args.python, "-c", "import sys; print(sys.version.split()[0])"],
        capture_output=True, text=True, check=True).stdout.strip()
    print(f"## Sampler benchmark: {', '.join(s.name for s in samplers)}; targets on Python "
          f"{python_version}; {os.cpu_count()} CPUs; {load()}\n", flush=True)
    raw = {"python": python_version, "quick": quick}
    with tempfile.TemporaryDirectory(prefix="stepscope-bench-") as tmp:
        workdir = Path(tmp)
        if "a" in parts:
            seconds, reps, rate = (2, 1, 1000) if quick else (4, 5, 1000)
            pin = PIN_TO_CPU_0 if args.same_cpu else []
            floor = measure_floor(workdir)
            start_load = load()
            results, pinned_floor = bench_cpu_per_sample(samplers, args.python, seconds, reps,
                                                         rate, workdir, pin)
            floor.update(pinned_floor or {})
            raw["a"] = {"runs": results, "floor": floor, "same_cpu": args.same_cpu}
            print(report_cpu_per_sample(results, floor, rate, seconds,
                                        f"{start_load} → {load()}", args.same_cpu), flush=True)
        if "b" in parts:
            plan = [(1000, 1), (100, 2)] if quick else [(1000, 3), (100, 6)]
            reps = 1 if quick else 3
            start_load = load()
            results = bench_accuracy(samplers, args.python, plan, reps, workdir)
            raw["b"] = results
            print(report_accuracy(results, plan, f"{start_load} → {load()}"), flush=True)
        if "c" in parts:
            rates = [1000, 10000] if quick else [1000, 2000, 5000, 10000, 20000]
            seconds = 1 if quick else 3
            start_load = load()
            results = bench_highest_rate(samplers, args.python, rates, seconds, workdir)
            raw["c"] = results
            print(report_highest_rate(results, rates, seconds, f"{start_load} → {load()}"),
                  flush=True)
        if "d" in parts:
            seconds, warmup, phase = (3.0, 0.7, 0.2) if quick else (14.0, 0.7, 0.2)
            start_load = load()
            results = bench_slowdown(samplers, args.python, seconds, warmup, phase, workdir)
            raw["d"] = results
            print(report_slowdown(results, seconds, phase, f"{start_load} → {load()}"),
                  flush=True)
        if "t" in parts:
            seconds, reps, rate = (3, 1, 100) if quick else (6, 4, 100)
            start_load = load()
            results = bench_training_job(samplers, seconds, reps, rate, workdir)
            raw["t"] = results
            print(report_training_job(results, rate, seconds, f"{start_load} → {load()}"),
                  flush=True)
        stepscope = [s for s in samplers if isinstance(s, Stepscope)]
        if "p" in parts and stepscope and shutil.which("perf"):
            seconds, rate = (2, 1000) if quick else (5, 1000)
            start_load = load()
            rows, total = bench_profile(stepscope[0], args.python, seconds, rate, workdir)
            raw["p"] = {"rows": rows, "total_us": total}
            print(report_profile(rows, total, rate, seconds, f"{start_load} → {load()}"),
                  flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()
