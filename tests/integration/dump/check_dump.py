"""Checks `stepscope dump --json` output against what the program reported.

Usage: check_dump.py DUMP.json EXPECTED.json PROGRAM_PID
"""
import json
import sys

dump = json.load(open(sys.argv[1]))
expected = json.load(open(sys.argv[2]))
pid = int(sys.argv[3])
errors = []


def check(condition, message):
    if not condition:
        errors.append(message)


processes = {p["pid"]: p for p in dump["processes"]}
check(pid in processes, "the program's process is missing")
check(expected["child_pid"] in processes, "the forked child is missing")
if not errors:
    parent = processes[pid]
    check(parent["python"] and parent["python"]["version"].startswith(expected["version"] + "."),
          "version: %r, expected %s" % (parent["python"], expected["version"]))
    threads = {t["tid"]: t for t in parent["threads"]}
    main = threads.get(pid)
    spinner = threads.get(expected["spinner_tid"])
    check(main is not None, "no main thread (tid %d) among %s" % (pid, list(threads)))
    check(spinner is not None, "no spinner thread (tid %d)" % expected["spinner_tid"])
    if main:
        got = [{k: f[k] for k in ("function", "file", "line")} for f in main["frames"]]
        check(got == expected["main"], "main stack:\n  got      %s\n  expected %s" % (got, expected["main"]))
        check(main["state"] == "idle", "main thread state %s" % main["state"])
        check(not main["holds_gil"], "the blocked main thread holds the GIL")
    if spinner:
        check(spinner["name"] == "spinner", "spinner name %r" % spinner["name"])
        check(spinner["state"] == "running", "spinner state %s" % spinner["state"])
        check(spinner["holds_gil"], "the spinning thread does not hold the GIL")
        top = spinner["frames"][0] if spinner["frames"] else {}
        check(top.get("function") == "spin" and top.get("line") in expected["spin_code_lines"],
              "spinner's innermost frame: %s" % top)
    child = processes[expected["child_pid"]]
    child_frames = child["threads"][0]["frames"] if child["threads"] else []
    check(child_frames and child_frames[0]["function"] == "child_wait",
          "child's innermost frame: %s" % (child_frames[:1],))

if errors:
    sys.exit("\n".join(errors))
