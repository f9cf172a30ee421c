"""The wheel's binary against the development build's, in one run (issue 30).

    .venv/bin/python bench/wheel_binary.py [--wheel dist/stepscope-*.whl] [--build build/stepscope]
                                          [--runs 200] [--work-runs 10]

Installs the wheel into a fresh venv, records the README's training job once with the build,
then times, interleaved (wheel, build, wheel, build ...): start-up (`--version`), `report --json`
and `export --format collapsed` of that run, and `report --json` of the largest Kineto trace of
../shared/testdata/kineto when present. Prints wall-clock medians and p90s in ms, the ratio
wheel / build, the wheel's size and what it installs."""
import argparse
import glob
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def wall_ms(command):
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - start) * 1e3


def interleaved(commands, runs):
    """commands: {label: argv}; runs each in turn, runs times; {label: [ms...]}."""
    times = {label: [] for label in commands}
    for _ in range(runs):
        for label, command in commands.items():
            times[label].append(wall_ms(command))
    return times


def p90(values):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]


def install(wheel, into):
    subprocess.run([sys.executable, "-m", "venv", into], check=True)
    subprocess.run([os.path.join(into, "bin", "python"), "-m", "pip", "install", "-q", "--no-index",
                    "--disable-pip-version-check", wheel], check=True)
    return os.path.join(into, "bin", "stepscope")


def installed_bytes(venv):
    total = 0
    for root in (os.path.join(venv, "bin", "stepscope"), os.path.join(venv, "lib", "stepscope")):
        if os.path.isfile(root):
            total += os.path.getsize(root)
        for folder, _, files in os.walk(root):
            total += sum(os.path.getsize(os.path.join(folder, f)) for f in files)
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    wheels = sorted(glob.glob(os.path.join(REPO, "dist", "stepscope-*-manylinux_2_28_x86_64.whl")))
    parser.add_argument("--wheel", default=wheels[-1] if wheels else None)
    parser.add_argument("--build", default=os.path.join(REPO, "build", "stepscope"))
    parser.add_argument("--runs", type=int, default=200, help="start-up runs of each binary")
    parser.add_argument("--work-runs", type=int, default=10, help="runs of each binary per workload")
    args = parser.parse_args()
    if not args.wheel:
        sys.exit("no wheel in dist/: run scripts/build-wheel")

    with tempfile.TemporaryDirectory() as tmp:
        venv = os.path.join(tmp, "venv")
        wheel_bin = install(args.wheel, venv)
        run = os.path.join(tmp, "run.db")
        subprocess.run([args.build, "record", "-o", run, "--", os.path.join(REPO, ".venv", "bin", "python"),
                        os.path.join(REPO, "examples", "train_lm.py"), "--steps", "40", "--num-workers", "2"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        workloads = [("start-up (--version)", ["--version"], args.runs),
                     ("report --json RUN.db", ["report", "--json", run], args.work_runs),
                     ("export --format collapsed RUN.db", ["export", "--format", "collapsed", run], args.work_runs)]
        traces = glob.glob(os.path.join(REPO, "..", "shared", "testdata", "kineto", "**", "*.json*"), recursive=True)
        if traces:
            trace = max(traces, key=os.path.getsize)
            size_mb = os.path.getsize(trace) / 1e6
            workloads.append((f"report --json {os.path.basename(trace)} ({size_mb:.0f} MB)",
                              ["report", "--json", trace], args.work_runs))

        print(f"wheel: {os.path.basename(args.wheel)}, {os.path.getsize(args.wheel) / 1e6:.2f} MB; "
              f"installed binary and libraries {installed_bytes(venv) / 1e6:.2f} MB; "
              f"build/stepscope {os.path.getsize(args.build) / 1e6:.1f} MB (with debug information)")
        print()
        print("| workload | wheel median (p90) ms | build median (p90) ms | wheel / build |")
        print("|---|---|---|---|")
        for label, argv, runs in workloads:
            times = interleaved({"wheel": [wheel_bin] + argv, "build": [args.build] + argv}, runs)
            wheel_ms, build_ms = statistics.median(times["wheel"]), statistics.median(times["build"])
            print(f"| {label} | {wheel_ms:.2f} ({p90(times['wheel']):.2f}) | {build_ms:.2f} "
                  f"({p90(times['build']):.2f}) | {wheel_ms / build_ms:.2f} |", flush=True)


if __name__ == "__main__":
    main()
