"""Reads a run file with plain SQL and tools/run_samples.py (independently of stepscope's C++ code)
and answers questions about its samples.

  check_record.py RUN.db shares FUNC...      -> JSON {func: share of samples whose leaf is FUNC}
  check_record.py RUN.db has FUNC            -> exit 0 when some sample has FUNC on its stack,
                                                printing the pids that ran it
  check_record.py RUN.db thread-state NAME   -> the most common state of samples whose stack
                                                contains NAME
  check_record.py RUN.db phases FUNC...      -> JSON {"counts": [samples with each FUNC on the
                                                stack], "ordered": whether, in time order, no
                                                sample has an earlier FUNC than one before it}
  check_record.py RUN.db summary             -> JSON counts of samples, processes, threads
  check_record.py RUN.db leaf-callers FUNC OUTER -> JSON {"samples": samples whose leaf is FUNC,
                                                "whole": of them, those whose outermost frame is OUTER,
                                                "callers": {the frame under FUNC: samples}}
"""
import collections
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
from run_samples import open_with_samples  # noqa: E402


def load(path):
    db = open_with_samples(path)
    db.text_factory = bytes
    strings = [row[0].decode("utf-8", "replace") for row in db.execute("SELECT value FROM strings ORDER BY id")]
    frames = [strings[f] for (f,) in db.execute("SELECT function FROM frames ORDER BY id")]
    parent = {0: None}
    frame_of = {}
    for sid, par, fr in db.execute("SELECT id, parent, frame FROM stacks ORDER BY id"):
        parent[sid], frame_of[sid] = par, fr
    return db, frames, parent, frame_of


def stack_functions(sid, frames, parent, frame_of):
    out = []
    while sid:
        out.append(frames[frame_of[sid]])
        sid = parent[sid]
    return out  # leaf first


def main():
    path, command, *args = sys.argv[1:]
    db, frames, parent, frame_of = load(path)
    samples = list(db.execute("SELECT pid, tid, stack, state FROM samples ORDER BY ts_ns, id"))
    if command == "shares":
        busy = [s for s in samples if s[3] != 2]
        leaves = collections.Counter()
        for pid, tid, sid, state in busy:
            stack = stack_functions(sid, frames, parent, frame_of)
            for name in args:
                if name in stack:
                    leaves[name] += 1
        total = sum(leaves.values())
        print(json.dumps({name: leaves[name] / total if total else 0 for name in args}))
    elif command == "has":
        pids = sorted({pid for pid, tid, sid, state in samples
                       if args[0] in stack_functions(sid, frames, parent, frame_of)})
        print(" ".join(map(str, pids)))
        sys.exit(0 if pids else 1)
    elif command == "thread-state":
        states = collections.Counter(state for pid, tid, sid, state in samples
                                     if args[0] in stack_functions(sid, frames, parent, frame_of))
        names = {0: "unknown", 1: "running", 2: "idle", 3: "disk"}
        print(names[states.most_common(1)[0][0]] if states else "none")
    elif command == "phases":
        counts, last, ordered = [0] * len(args), -1, True
        for pid, tid, sid, state in samples:
            stack = stack_functions(sid, frames, parent, frame_of)
            phase = next((i for i, name in enumerate(args) if name in stack), None)
            if phase is None:
                continue
            counts[phase] += 1
            ordered = ordered and phase >= last
            last = phase
        print(json.dumps({"counts": counts, "ordered": ordered}))
    elif command == "leaf-callers":
        leaf, outer = args
        stacks = [stack_functions(sid, frames, parent, frame_of) for pid, tid, sid, state in samples]
        ending = [stack for stack in stacks if stack and stack[0] == leaf]
        callers = collections.Counter(stack[1] if len(stack) > 1 else "" for stack in ending)
        print(json.dumps({"samples": len(ending), "whole": sum(stack[-1] == outer for stack in ending),
                          "callers": dict(callers)}))
    elif command == "summary":
        print(json.dumps({
            "samples": len(samples),
            "processes": db.execute("SELECT COUNT(*) FROM processes").fetchone()[0],
            "threads": db.execute("SELECT COUNT(*) FROM threads").fetchone()[0],
            "exit_statuses": [row[0] for row in db.execute("SELECT exit_status FROM processes ORDER BY id")],
        }))


if __name__ == "__main__":
    main()
