#!/usr/bin/env python3
"""The recorder's memory over a long recording (issue 33): `record --rate 1000` of
bench/targets/deep_stack.py (one thread, 30 frames, spinning) for --minutes, standing in for
a day at 100 Hz of a job with several threads. Reads the recorder's VmRSS and VmHWM every
--every seconds and prints them, then the peak after the first minute against the peak at the
end (goal: within 10%), and the run file's bytes per sample.

  bench/recorder_soak.py [--minutes 5] [--every 10] [--rate 1000]
"""
import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STEPSCOPE = os.path.join(ROOT, "build", "stepscope")


def memory_kib(pid):
    """(VmRSS, VmHWM) of `pid` in KiB."""
    fields = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0])
    return fields["VmRSS"], fields["VmHWM"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--minutes", type=float, default=5)
    p.add_argument("--every", type=float, default=10)
    p.add_argument("--rate", type=int, default=1000)
    args = p.parse_args()
    out = os.path.join(tempfile.mkdtemp(prefix="stepscope-soak-"), "soak.db")
    seconds = args.minutes * 60
    recorder = subprocess.Popen([STEPSCOPE, "record", "--rate", str(args.rate), "-o", out, "--", sys.executable,
                                 os.path.join(ROOT, "bench", "targets", "deep_stack.py"), str(seconds)],
                                stderr=subprocess.PIPE, text=True)
    start = time.monotonic()
    readings = []
    print(f"{'s':>6} {'VmRSS MiB':>10} {'VmHWM MiB':>10}")
    while recorder.poll() is None:
        time.sleep(args.every)
        try:
            rss, hwm = memory_kib(recorder.pid)
        except (FileNotFoundError, ProcessLookupError, KeyError):
            break
        elapsed = time.monotonic() - start
        readings.append((elapsed, rss, hwm))
        print(f"{elapsed:>6.0f} {rss / 1024:>10.2f} {hwm / 1024:>10.2f}", flush=True)
    summary = recorder.communicate()[1].strip().splitlines()[-1]
    after_minute = next((hwm for t, _, hwm in readings if t >= 60), None)
    end = readings[-1][2] if readings else None
    if after_minute and end:
        print(f"peak after the first minute {after_minute / 1024:.2f} MiB, at the end {end / 1024:.2f} MiB: "
              f"{100 * (end - after_minute) / after_minute:+.1f}%")
    db = sqlite3.connect(out)
    samples = db.execute("SELECT total(count) FROM sample_blocks").fetchone()[0]
    print(f"{summary}\nrun file {os.path.getsize(out) / 1e6:.1f} MB, {int(samples)} samples, "
          f"{os.path.getsize(out) / samples:.2f} bytes per sample in the file")


if __name__ == "__main__":
    main()
