"""What torch's Flight Recorder, which `record` turns on (TORCH_FR_BUFFER_SIZE=2000), adds
to each collective: two gloo ranks on this machine (torchrun, CPU) time N all-reduces of
one float, with the recorder on and off, alternating launches ROUNDS times.

  bench/flight_recorder_overhead.py [--rounds 5] [--collectives 3000]

Prints the median per-collective time of each setting over the rounds, and the difference.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

WORKER = r'''
import os, sys, time, torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.ones(1)
for _ in range(200):
    dist.all_reduce(t)
n = int(sys.argv[1])
start = time.perf_counter()
for _ in range(n):
    dist.all_reduce(t)
elapsed = time.perf_counter() - start
if dist.get_rank() == 0:
    with open(sys.argv[2], "w") as out:
        out.write(repr(elapsed / n))
dist.destroy_process_group()
'''


def one_launch(torchrun, script, collectives, buffer_size, port):
    with tempfile.NamedTemporaryFile("r", suffix=".txt") as result:
        env = dict(os.environ, TORCH_FR_BUFFER_SIZE=str(buffer_size), OMP_NUM_THREADS="1")
        subprocess.run([torchrun, "--nproc-per-node", "2", "--master-port", str(port), script, str(collectives),
                        result.name], env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return float(open(result.name).read())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--collectives", type=int, default=3000)
    args = p.parse_args()
    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as script:
        script.write(WORKER)
    times = {0: [], 2000: []}
    for round_ in range(args.rounds):
        for size in (0, 2000):
            times[size].append(one_launch(torchrun, script.name, args.collectives, size, 29700 + round_ * 2 + (size > 0)))
    os.unlink(script.name)
    off, on = statistics.median(times[0]), statistics.median(times[2000])
    print("all_reduce of one float, 2 gloo ranks, %d rounds of %d" % (args.rounds, args.collectives))
    print("  Flight Recorder off: %.1f us per collective  (rounds: %s)" % (off * 1e6, ", ".join("%.1f" % (t * 1e6) for t in times[0])))
    print("  Flight Recorder on:  %.1f us per collective  (rounds: %s)" % (on * 1e6, ", ".join("%.1f" % (t * 1e6) for t in times[2000])))
    print("  difference of medians: %+.1f us per collective (%+.1f%%); of minimums: %+.1f us"
          % ((on - off) * 1e6, (on / off - 1) * 100, (min(times[2000]) - min(times[0])) * 1e6))


if __name__ == "__main__":
    main()
