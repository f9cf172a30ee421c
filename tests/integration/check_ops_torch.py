"""Compares the "ops" of `stepscope report --json` with what torch's own
key_averages() said about the same profile (written by
programs/torch_ops_trace.py).

usage: check_ops_torch.py KEY_AVERAGES.json REPORT.json [--shapes]

Calls must be equal. Times may differ by rounding only: torch keeps each
event's start and end in (fractional) microseconds relative to the trace
start, the exported trace writes them with three decimals; so each event can
be off by a few nanoseconds, and a row by that times its calls (self time
involves the children too, hence the factor).
"""
import json
import sys


def normal_shapes(text):
    text = (text or "").replace(" ", "")
    return text if text else "[]"


def key(row, shapes):
    return (row["name"], normal_shapes(row.get("input_shapes")) if shapes else "")


def main():
    torch_rows = json.load(open(sys.argv[1]))
    shapes = "--shapes" in sys.argv
    want_rows = torch_rows["ops_by_shapes" if shapes else "ops"]
    report = json.load(open(sys.argv[2]))
    got = {}
    for row in report["ops"]:
        if row["kind"] == "device":
            continue
        k = key(row, shapes)
        if k in got:  # the same name as a user annotation and as an op: torch keeps both apart too
            k = k + (row["kind"],)
        got[k] = row
    failures = []
    # torch rows are unique by (name, device type, user annotation): pair by
    # name, trying the annotation row when the plain one is taken.
    for want in want_rows:
        k = key(want, shapes)
        row = got.pop(k, None) or got.pop(k + ("user_annotation",), None) or got.pop(k + ("host",), None)
        if row is None:
            failures.append(f"missing: {k}")
            continue
        if row["calls"] != want["calls"]:
            failures.append(f"{k}: calls {row['calls']}, torch {want['calls']}")
        tolerance = 0.005 * max(1, want["calls"]) * 4
        for field in ("self_cpu_us", "cpu_total_us"):
            if abs(row[field] - want[field]) > tolerance:
                failures.append(f"{k}: {field} {row[field]}, torch {want[field]}")
    for k in got:
        failures.append(f"extra row: {k}")
    if failures:
        print("\n".join(failures[:40]), file=sys.stderr)
        sys.exit(1)
    print(f"{len(want_rows)} rows equal")


main()
