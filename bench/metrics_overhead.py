#!/usr/bin/env python3
"""The recorder's CPU with `record --metrics` and a scraper, against without.

Each round attaches to bench/targets/deep_stack.py (30 Python frames, spinning) for
--seconds at --rate, three ways interleaved: plain `record`; `record --metrics
127.0.0.1:PORT` with nobody scraping; and the same with a scraper fetching /metrics
once a second (as Prometheus would at a 1 s interval, five times more often than
its default). It prints the recorder's CPU (user + system, from wait4) per sample
for each, medians over the rounds.

  bench/metrics_overhead.py [--rounds 5] [--seconds 10] [--rate 1000]
"""
import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape_every_second(port, stop, scrapes):
    while not stop.wait(1.0):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=1) as response:
                response.read()
                scrapes.append(1)
        except OSError:
            pass  # not listening yet


def one_run(args, setting, out_dir, target):
    port = free_port()
    command = [args.stepscope, "record", "-o", os.path.join(out_dir, "run.db"), "--rate", str(args.rate),
               "--duration", str(args.seconds), "--pid", str(target)]
    if setting != "plain":
        command += ["--metrics", "127.0.0.1:%d" % port]
    stop, scrapes = threading.Event(), []
    scraper = threading.Thread(target=scrape_every_second, args=(port, stop, scrapes))
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if setting == "scraped":
        scraper.start()
    _, status, usage = os.wait4(process.pid, 0)
    stop.set()
    if scraper.is_alive():
        scraper.join()
    stderr = process.stderr.read()
    samples = int(re.search(r"recorded [\d.]+ s: (\d+) samples", stderr).group(1))
    return 1e6 * (usage.ru_utime + usage.ru_stime) / samples, len(scrapes)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--stepscope", default=os.path.join(ROOT, "build", "stepscope"))
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--rate", type=float, default=1000)
    args = p.parse_args()
    results = {"plain": [], "serving": [], "scraped": []}
    scrapes = []
    target = subprocess.Popen([sys.executable, os.path.join(ROOT, "bench", "targets", "deep_stack.py")])
    time.sleep(1)  # started, and its stack built
    with tempfile.TemporaryDirectory() as out_dir:
        for _ in range(args.rounds):
            for setting in results:
                us, n = one_run(args, setting, out_dir, target.pid)
                results[setting].append(us)
                if setting == "scraped":
                    scrapes.append(n)
    target.kill()
    print("recorder CPU per sample, %d rounds of %.0f s at %.0f Hz (medians; rounds)" % (args.rounds, args.seconds, args.rate))
    for setting, values in results.items():
        print("%-8s %6.2f us  %s" % (setting, statistics.median(values), " ".join("%.2f" % v for v in values)))
    print("scrapes per scraped run:", scrapes)


if __name__ == "__main__":
    main()
