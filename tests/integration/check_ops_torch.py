"""Compares the "ops" of `stepscope report --json` with what torch's own
key_averages() said about the same profile (written by
programs/torch_ops_trace.py).

usage: check_ops_torch.py KEY_AVERAGES.json REPORT.json [--shapes]

Calls must be equal. Times may differ by rounding only: torch keeps each
event's start and end in (fractional) microseconds relative to the trace
start, the exported trace writes them with three decimals; so each event can
be off by a few nanoseconds, and a row by that times its calls (self time
involves the children too, hence the factor).

A profile of a GPU program (torch rows with a device_type) is also compared
on device time: torch's CUDA rows (kernels, copies) against stepscope's
device rows, and every operator's self and total device time. There torch
counts what the exported trace cannot show alike: CUPTI's overhead events
(lazy module loading, buffer requests), which it nests under the call they
happened in while the trace puts them on no thread, and to which it gives the
device time of that call's kernel a second time. The program lists those
events with their ancestors ("overhead"), and the expected figures are
torch's with them taken back out: their time returns to their parent's self
time, their device time leaves every ancestor's total. Device-side copies of
user annotations (a CUDA row named like a host range) are not operators.
"""
import collections
import json
import sys


def normal_shapes(text):
    text = (text or "").replace(" ", "")
    return text if text else "[]"


def key(row, shapes):
    return (row["name"], normal_shapes(row.get("input_shapes")) if shapes else "")


def without_overhead(rows, overhead):
    """torch's host rows as they would be without CUPTI's overhead events."""
    names = {event["name"] for event in overhead}
    self_cpu, device = collections.Counter(), collections.Counter()
    for event in overhead:
        if event["ancestors"]:
            self_cpu[event["ancestors"][0]] += event["cpu_us"]
        for ancestor in event["ancestors"]:
            device[ancestor] += event["self_device_us"]
    expected = []
    for row in rows:
        if row["name"] in names:
            continue
        row = dict(row)
        row["self_cpu_us"] += self_cpu[row["name"]]
        if "device_total_us" in row:
            row["device_total_us"] -= device[row["name"]]
        expected.append(row)
    return expected


def compare(want, row, fields, failures, k):
    if row["calls"] != want["calls"]:
        failures.append(f"{k}: calls {row['calls']}, torch {want['calls']}")
    tolerance = 0.005 * max(1, want["calls"]) * 4
    for field in fields:
        if field in want and abs(row[field] - want[field]) > tolerance:
            failures.append(f"{k}: {field} {row[field]}, torch {want[field]}")


def main():
    torch_rows = json.load(open(sys.argv[1]))
    shapes = "--shapes" in sys.argv
    want_rows = torch_rows["ops_by_shapes" if shapes else "ops"]
    host_rows = [w for w in want_rows if w.get("device_type", "CPU") == "CPU"]
    device_rows = [w for w in want_rows if w.get("device_type", "CPU") != "CPU"]
    host_rows = without_overhead(host_rows, torch_rows.get("overhead", []))
    report = json.load(open(sys.argv[2]))
    got, got_device = {}, {}
    for row in report["ops"]:
        if row["kind"] == "device":
            got_device[key(row, shapes)] = row
            continue
        k = key(row, shapes)
        if k in got:  # the same name as a user annotation and as an op: torch keeps both apart too
            k = k + (row["kind"],)
        got[k] = row
    failures = []
    # torch rows are unique by (name, device type, user annotation): pair by
    # name, trying the annotation row when the plain one is taken.
    for want in host_rows:
        k = key(want, shapes)
        row = got.pop(k, None) or got.pop(k + ("user_annotation",), None) or got.pop(k + ("host",), None)
        if row is None:
            failures.append(f"missing: {k}")
            continue
        compare(want, row, ("self_cpu_us", "cpu_total_us", "self_device_us", "device_total_us"), failures, k)
    host_names = {w["name"] for w in host_rows}
    device_checked = 0
    for want in device_rows:
        k = key(want, shapes)
        row = got_device.pop(k, None)
        if row is None and want["name"] in host_names:
            continue  # a user annotation's device-side range
        if row is None:
            failures.append(f"missing device row: {k}")
            continue
        compare(want, row, ("self_device_us",), failures, k)
        device_checked += 1
    for k in list(got) + list(got_device):
        failures.append(f"extra row: {k}")
    if failures:
        print("\n".join(failures[:40]), file=sys.stderr)
        sys.exit(1)
    print(f"{len(host_rows)} host rows and {device_checked} device rows equal")


main()
