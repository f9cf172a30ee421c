"""Checks `stepscope report DUMP... --json` (stepscope.hang/1) of a hung job.

  check_job_hang.py REPORT.json [--source S] [--collective NAME] [--group G] [--entered R...]
                    [--missing R...] [--unknown R...] [--missing-in FUNCTION]
                    [--missing-exited STATUS] [--missing-exception TEXT] [--findings N]
                    [--evidence TEXT]
  check_job_hang.py REPORT.json --torch-analyzer DUMP.json...

The first form checks the verdict (the first finding). The second runs torch's own
Flight Recorder analyzer (python -m torch.distributed.flight_recorder.fr_trace) on the
Flight Recorder state the dumps hold and checks that every collective it finds some
ranks missing from is one of the report's findings, with the same sequence number,
group, name and missing ranks, and that the report finds no other.
"""
import argparse
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile


def fail(message):
    sys.exit("check_job_hang: " + message)


def check_verdict(report, args):
    findings = report["findings"]
    if not findings:
        fail("no finding; verdict %r" % report["verdict"])
    top = findings[0]
    if top["id"] != "collective_hang" or report["verdict"] != top["title"]:
        fail("first finding %s, verdict %r" % (top["id"], report["verdict"]))
    expect = {"source": (report["source"], args.source), "name": (top["collective"]["name"], args.collective),
              "group": (top["collective"]["process_group"], args.group),
              "entered": (top["entered_ranks"], args.entered), "missing": (top["missing_ranks"], args.missing),
              "unknown": (top["unknown_ranks"], args.unknown),
              "findings": (len(findings), args.findings)}
    for what, (got, want) in expect.items():
        if want is not None and got != want:
            fail("%s: %r, expected %r (verdict %r)" % (what, got, want, report["verdict"]))
    if args.evidence and not any(args.evidence in e for e in top["evidence"]):
        fail("no evidence says %r: %s" % (args.evidence, top["evidence"]))
    if args.collective and args.collective.startswith("gloo:") and not top["collective"]["seq"] > 0:
        fail("no sequence number from the Flight Recorder")
    ranks = {r["rank"]: r for r in report["ranks"]}
    for rank in top["missing_ranks"]:
        place = ranks[rank]
        if args.missing_in and args.missing_in not in [f["function"] for f in place["frames"]]:
            fail("rank %d is in %s, not in %s" % (rank, place["frames"], args.missing_in))
        if args.missing_in and not any(args.missing_in in e for e in top["evidence"]):
            fail("the evidence does not say where rank %d is: %s" % (rank, top["evidence"]))
        if args.missing_exited is not None and (place["where"], place["exit_status"]) != ("exited", args.missing_exited):
            fail("rank %d: %s, status %s" % (rank, place["where"], place["exit_status"]))
        if args.missing_exception and place["exception"] != args.missing_exception:
            fail("rank %d's exception: %r" % (rank, place["exception"]))


def torch_analyzer_view(dumps):
    """{(group, seq): (name, missing ranks)} as fr_trace reports them."""
    folder = tempfile.mkdtemp()
    for path in dumps:
        for process in json.load(open(path))["processes"]:
            state = process.get("flight_recorder")
            if state is None or process.get("rank") is None:
                continue
            # torch 2.12's gloo backend leaves pg_config without the groups' ranks
            # (one entry "" with "[]"); the analyzer needs them, as NCCL writes them.
            names = {e["process_group"][0]: e["process_group"][1] for e in state["entries"]}
            state["pg_config"] = {group: {"name": group, "desc": names.get(group, ""),
                                          "ranks": str(list(range(process["world_size"])))}
                                  for group in state["pg_status"]}
            with open(os.path.join(folder, "rank_%d" % process["rank"]), "wb") as out:
                pickle.dump(state, out)
    result = subprocess.run([sys.executable, "-m", "torch.distributed.flight_recorder.fr_trace", folder],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        fail("fr_trace failed: %s" % result.stdout[-2000:])
    view = {}
    for block in result.stdout.split("Not all ranks joining collective")[1:]:
        seq = int(re.search(r"sequence number: (\d+)", block).group(1))
        group = re.search(r"group info: ([^:\n]+)", block).group(1)
        name = re.search(r"collective: (\S+)", block).group(1)
        missing = sorted(int(r) for r in re.findall(r"\d+", re.search(r"missing ranks: \{([^}]*)\}", block).group(1)))
        view[(group, seq)] = (name, missing)
    if not view:
        fail("fr_trace found no collective with missing ranks:\n%s" % result.stdout[-2000:])
    return view


def main():
    p = argparse.ArgumentParser()
    p.add_argument("report")
    p.add_argument("--source")
    p.add_argument("--collective")
    p.add_argument("--group")
    p.add_argument("--entered", type=int, nargs="+")
    p.add_argument("--missing", type=int, nargs="+")
    p.add_argument("--unknown", type=int, nargs="+")
    p.add_argument("--missing-in")
    p.add_argument("--missing-exited", type=int)
    p.add_argument("--missing-exception")
    p.add_argument("--findings", type=int)
    p.add_argument("--evidence")
    p.add_argument("--torch-analyzer", nargs="+")
    args = p.parse_args()
    report = json.load(open(args.report))
    if args.torch_analyzer:
        ours = {(f["collective"]["process_group"], f["collective"]["seq"]): (f["collective"]["name"], f["missing_ranks"])
                for f in report["findings"]}
        theirs = torch_analyzer_view(args.torch_analyzer)
        if ours != theirs:
            fail("stepscope %s, torch's analyzer %s" % (ours, theirs))
        return
    check_verdict(report, args)


if __name__ == "__main__":
    main()
