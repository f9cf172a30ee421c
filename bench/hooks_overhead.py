#!/usr/bin/env python3
"""Step-time overhead of stepscope's in-process hooks.

Default (in one process): a training loop on the CPU (an in-memory DataLoader)
runs blocks of steps with the hooks out and with them in, alternating ABBA round by
round inside one process, so that the machine's slow drifts (a vCPU's state, other
load) hit both alike. The hooks send to a socket this script drains, as they would to
`record`. It prints each setting's median and mean step, and the hooks' cost per step
in microseconds: the median over rounds of (hooks block - bare block), with its range.

  --model blocks   60 blocks of Linear(32, 32) and ReLU, and a last Linear: 182 modules, SGD
  --model mlp      an MLP of 3 Linear layers (width --width): 6 modules, AdamW

--alternate (the figure of record) installs the hooks once and turns every Hook on and
off turn by turn (on, off, off, on, ...): --rounds turns each way of --turn steps (default
1). On a VM whose drifts move a block of steps by more than the hooks cost, a drift then
hits both settings alike. With one step a turn, what the hooks do once per 100 ms (send
their records, read the memory peaks) falls on the steps with the hooks on two or three
times as often as when they are always on: --turn 12 (about 100 ms of steps) charges it
as often as a run would.
It prints both settings' median and 10 %-trimmed mean and their differences with a 90 %
bootstrap interval. The wrappers' cost with their hooks off is not in it (measured apart
as nil: bench/README.md, "The step hooks, halved"). With --baseline DIR (another checkout's
python/ directory, say a `git worktree` of the commit before a change) that checkout's hooks
are installed beside these, and each step runs one of three settings: none, these, the
baseline's; it prints the difference of the two with its interval, a drift hitting both alike.
Each difference is also taken paired by round (the turns of one round ran within
milliseconds): on the AMD EPYC VM that narrows the interval from about +-60 us to +-15.

--processes instead runs whole processes, round by round: bare, the hooks alone, and
under `stepscope record --rate 100` (hooks and the sampler), which is how the sampler's
share is seen (the sampler cannot be taken out of a running process). --baseline DIR adds
the hooks of another checkout's python/ directory (say, a `git worktree` of the commit
before a change) as a fourth setting of the same rounds.

  bench/hooks_overhead.py [--model blocks|mlp] [--rounds 200] [--block 13]
  bench/hooks_overhead.py --alternate [--model blocks|mlp] [--rounds 4000] [--turn 1] [--baseline DIR/python]
  bench/hooks_overhead.py --processes [--rounds 5] [--steps 400] [--baseline DIR/python]
"""
import argparse
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# argv: model, width, then either "blocks ROUNDS BLOCK" (in-process A/B) or
# "steps N" (one setting for the whole process).
LOOP = r"""
import json, statistics, sys, time
import torch
from torch.utils.data import DataLoader, TensorDataset
torch.set_num_threads(1)
torch.manual_seed(0)
model_kind, width, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
nn = torch.nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear, self.act = nn.Linear(32, 32), nn.ReLU()

    def forward(self, x):
        return self.act(self.linear(x))


if model_kind == "blocks":
    features, batch = 32, 64
    model = nn.Sequential(*[Block() for _ in range(60)], nn.Linear(32, 10))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
else:
    features, batch = 256, 64
    model = nn.Sequential(nn.Linear(256, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                          nn.Linear(width, 10))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)


def batches():
    data = TensorDataset(torch.randn(batch * 500, features), torch.randint(0, 10, (batch * 500,)))
    while True:
        yield from DataLoader(data, batch_size=batch)


source = batches()


def run(steps):
    times = []
    last = time.perf_counter()
    for _ in range(steps):
        x, y = next(source)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        now = time.perf_counter()
        times.append(now - last)
        last = now
    return times


run(100)  # warm-up: AdamW's lazy set-up, allocator, caches
if mode == "steps":
    times = run(int(sys.argv[4]))
    print("RESULT " + json.dumps({"median_ms": 1e3 * statistics.median(times)}))
    sys.exit(0)

from stepscope import _torch_hooks as hooks
if mode == "alternate":
    # Installed once; every Hook turned on and off turn by turn (argv[5] steps a turn).
    # With a baseline (argv[6]: a directory holding another checkout's hook package as
    # `stepscope_base`), its hooks are installed beside these and each turn runs one
    # setting: none, these, the baseline's.
    packages = {"hooks": hooks}
    turn = int(sys.argv[5])
    if len(sys.argv) > 6:
        sys.path.insert(0, sys.argv[6])
        from stepscope_base import _torch_hooks as base_hooks
        packages["baseline"] = base_hooks
    switches = {name: [h for h in vars(m).values() if isinstance(h, m.Hook)] for name, m in packages.items()}
    for m in packages.values():
        m.install(torch)
    run(50)  # the forward roots found and wrapped, the global module hooks off
    settings = ["bare"] + list(packages)
    times = {name: [] for name in settings}
    for r in range(int(sys.argv[4])):
        order = settings[r % len(settings):] + settings[:r % len(settings)]
        for setting in (order if r % 2 == 0 else order[::-1]):
            for name, hs in switches.items():
                for h in hs:
                    h.on = name == setting
            times[setting].append(run(turn))
    print("RESULT " + json.dumps(times))
    sys.exit(0)
rounds, block = int(sys.argv[4]), int(sys.argv[5])
blocks = {"bare": [], "hooks": []}
for r in range(rounds):
    for setting in (("bare", "hooks") if r % 2 == 0 else ("hooks", "bare")):
        if setting == "hooks":
            hooks.install(torch)
        else:
            hooks.uninstall()
        blocks[setting].append(run(block))
hooks.uninstall()
print("RESULT " + json.dumps(blocks))
"""


def drain(sock, stop):
    """Empties the socket every 10 ms, as `record` does: a sender never wakes a reader
    blocked in recv (a wake-up that, on a VM, costs the sender an interprocessor interrupt)."""
    sock.setblocking(False)
    while not stop.wait(0.01):
        try:
            while True:
                sock.recv(65536)
        except BlockingIOError:
            pass


def run(cmd, env):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    line = [l for l in out.splitlines() if l.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


# A hooks block starts with install(): its first step spans the switch, and the next
# two run with the global module hooks (discovery), as one step in 50 to 150 does later.
SETTLING = 3


def in_process(args, loop, hooked):
    blocks = run(loop + ["blocks", str(args.rounds), str(args.block)], hooked)
    steady = {name: [block[SETTLING:] for block in values] for name, values in blocks.items()}
    print("in one process: %d rounds of a %d-step block each way, model %s; the first %d steps of"
          " each block apart" % (args.rounds, args.block, args.model, SETTLING))
    print("%-7s %10s %10s" % ("setting", "median ms", "mean ms"))
    for name, values in steady.items():
        steps = [t for block in values for t in block]
        print("%-7s %10.4f %10.4f" % (name, 1e3 * statistics.median(steps), 1e3 * statistics.mean(steps)))
    bare = 1e6 * statistics.median([t for block in steady["bare"] for t in block])
    for stat in (statistics.median, statistics.mean):
        diffs = [1e6 * (stat(h) - stat(b)) for h, b in zip(steady["hooks"], steady["bare"])]
        low, high = quartiles(diffs)
        print("hooks' cost per step, block %-7s %+8.1f us (%+.2f%%); quartiles of the rounds %+.1f, %+.1f us"
              % (stat.__name__ + "s:", statistics.median(diffs), 100 * statistics.median(diffs) / bare, low, high))
    discovery = [1e6 * (t - statistics.median(b)) for h, b in zip(blocks["hooks"], steady["bare"]) for t in h[1:SETTLING]]
    print("a discovery step (global module hooks on): %+.1f us more than a bare step (median); at one"
          " step in 100 on average, %+.1f us a step" % (statistics.median(discovery), statistics.median(discovery) / 100))


def alternating(args, loop, hooked, tmp):
    """Turns of steps with the hooks on and off in turn: the machine's drifts, which move
    a block of steps by more than the hooks cost on this VM, hit both settings alike. With
    --baseline, another checkout's hooks are a third setting of the same rounds."""
    extra = [copy_as_baseline(args.baseline, tmp)] if args.baseline else []
    times = run(loop + ["alternate", str(args.rounds), str(args.turn)] + extra, hooked)
    turns = {name: [[1e6 * t for t in turn] for turn in values] for name, values in times.items()}
    bare_median = statistics.median(flat(turns["bare"]))
    print("in one process: %d turns of %d steps each way, on and off in turn (the Hooks' switches,"
          " installed once), model %s" % (args.rounds, args.turn, args.model))
    print("%-8s %10s %16s" % ("setting", "median ms", "trimmed mean ms"))
    for name, values in turns.items():
        print("%-8s %10.4f %16.4f" % (name, statistics.median(flat(values)) / 1e3, trimmed_mean(flat(values)) / 1e3))
    for name in [n for n in turns if n != "bare"]:
        for stat in (statistics.median, trimmed_mean):
            owner = name + ("'" if name.endswith("s") else "'s")
            print_cost("%s cost per step, %s:" % (owner, stat.__name__), turns["bare"], turns[name], stat,
                       bare_median)
    if "baseline" in turns:
        for stat in (statistics.median, trimmed_mean):
            print_cost("hooks - baseline, %s:" % stat.__name__, turns["baseline"], turns["hooks"], stat,
                       bare_median)


def flat(turns):
    return [t for turn in turns for t in turn]


def print_cost(label, before, after, stat, bare_median):
    """The cost of `after` over `before` (lists of turns of steps, in µs), over all steps
    and paired by round."""
    cost = stat(flat(after)) - stat(flat(before))
    low, high = bootstrap_interval(flat(before), flat(after), stat)
    print("%-40s %+7.1f us (%+.2f%% of the bare median); 90%% bootstrap interval %+.1f, %+.1f us"
          % (label, cost, 100 * cost / bare_median, low, high))
    # The turns of one round ran within milliseconds of each other: their differences
    # leave out the drifts that move whole stretches of steps.
    differences = [stat(a) - stat(b) for a, b in zip(after, before)]
    low, high = paired_bootstrap_interval(differences, stat)
    print("%-40s %+7.1f us paired by round; 90%% bootstrap interval %+.1f, %+.1f us"
          % ("", stat(differences), low, high))


def copy_as_baseline(python_dir, tmp):
    """python_dir's hook package, copied as `stepscope_base` into a directory of tmp (returned),
    its wrappers' mark renamed so that each package wraps the forward roots itself."""
    target = os.path.join(tmp, "baseline")
    package = os.path.join(target, "stepscope_base")
    shutil.copytree(os.path.join(python_dir, "stepscope"), package,
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in os.listdir(package):
        path = os.path.join(package, name)
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace("_stepscope_root", "_stepscope_base_root"))
    return target


def trimmed_mean(values, cut=0.1):
    """The mean of the middle 80 %: the VM's stalls of many ms left out, as the median does."""
    ordered = sorted(values)
    k = int(len(ordered) * cut)
    return statistics.mean(ordered[k:len(ordered) - k])


def bootstrap_interval(bare, hooked, stat, resamples=200, seed=1):
    rng = random.Random(seed)
    costs = sorted(stat(rng.choices(hooked, k=len(hooked))) - stat(rng.choices(bare, k=len(bare)))
                   for _ in range(resamples))
    return costs[int(0.05 * resamples)], costs[int(0.95 * resamples) - 1]


def paired_bootstrap_interval(differences, stat, resamples=200, seed=1):
    rng = random.Random(seed)
    costs = sorted(stat(rng.choices(differences, k=len(differences))) for _ in range(resamples))
    return costs[int(0.05 * resamples)], costs[int(0.95 * resamples) - 1]


def quartiles(values):
    q = statistics.quantiles(values, n=4)
    return q[0], q[2]


def whole_processes(args, loop, base, hooked, tmp):
    settings = {
        "bare": (loop, base),
        "hooks": (loop, hooked),
        "sampled": ([args.stepscope, "record", "--rate", "100", "-o", os.path.join(tmp, "run.db"), "--"] + loop,
                    base),
    }
    if args.baseline:
        settings["baseline"] = (loop, hooks_env(hooked, args.baseline))
    results = {name: [] for name in settings}
    for _ in range(args.rounds):
        for name, (cmd, env) in settings.items():
            results[name].append(run(cmd + ["steps", str(args.steps)], env)["median_ms"])
    bare = statistics.median(results["bare"])
    print("%-8s %10s %8s   rounds (median ms per step)" % ("setting", "step ms", "ratio"))
    for name, values in results.items():
        median = statistics.median(values)
        print("%-8s %10.3f %8.4f   %s" % (name, median, median / bare, " ".join("%.3f" % v for v in values)))


def hooks_env(env, python_dir):
    """env with the hook package of python_dir loaded at start-up, as `record` loads it."""
    return dict(env, PYTHONPATH=os.pathsep.join([os.path.join(python_dir, "stepscope_boot"), python_dir]))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stepscope", default=os.path.join(ROOT, "build", "stepscope"))
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--model", choices=("blocks", "mlp"), default="blocks")
    p.add_argument("--width", type=int, default=512, help="the MLP's hidden width: sets its step time")
    p.add_argument("--rounds", type=int, default=200)
    p.add_argument("--block", type=int, default=13, help="steps in each block (in one process)")
    p.add_argument("--processes", action="store_true", help="whole processes, with the sampler too")
    p.add_argument("--alternate", action="store_true",
                   help="in one process, the hooks on and off step by step (--rounds: steps each way)")
    p.add_argument("--turn", type=int, default=1,
                   help="steps of each setting's turn in a round (--alternate): with about 100 ms of steps, what"
                   " the hooks do once per 100 ms (a send, the memory peaks) falls on a turn as often as on"
                   " a stretch of steps with the hooks always on; with one step a turn it falls on the"
                   " steps with the hooks on two or three times as often")
    p.add_argument("--steps", type=int, default=400, help="steps of each process (--processes)")
    p.add_argument("--baseline", help="another checkout's python/ directory: a fourth setting (--processes), a"
                   " third one in the same process (--alternate)")
    args = p.parse_args()

    tmp = tempfile.mkdtemp()
    path = os.path.join(tmp, "hooks.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    stop = threading.Event()
    threading.Thread(target=drain, args=(sock, stop), daemon=True).start()

    base = dict(os.environ)
    base.pop("STEPSCOPE_CHANNEL", None)
    hooked = hooks_env(dict(base, STEPSCOPE_CHANNEL=path), os.path.join(ROOT, "python"))
    loop = [args.python, "-c", LOOP, args.model, str(args.width)]
    if args.processes:
        whole_processes(args, loop, base, hooked, tmp)
    elif args.alternate:
        alternating(args, loop, hooked, tmp)
    else:
        in_process(args, loop, hooked)
    stop.set()


if __name__ == "__main__":
    main()
