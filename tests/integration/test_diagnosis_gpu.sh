# The device-side diagnosis rules on real torch.profiler traces: each fires
# on a trace that shows its mechanism, with the share computed again here from
# the report's own "gpu" section, and stays quiet on traces that do not.
source "$(dirname "$0")/lib.sh"
need_kineto
kineto=$KINETO

# check NAME TRACE PYTHON: reports TRACE as JSON and runs PYTHON with `d` =
# its diagnosis list, `ids` = their ids, `by` = id -> finding, `g` = the
# first rank's GPU analysis and the helpers below; a failed assert fails the test.
check() {
  expect_status 0 "$STEPSCOPE" report "$kineto/$2" --json -o "$WORK/$1.json"
  "$PY" - "$WORK/$1.json" "$3" <<'PYEOF' || fail "$1: diagnosis check failed: $3"
import json, sys
report = json.load(open(sys.argv[1]))
d = report["diagnosis"]
ids = [f["id"] for f in d]
by = {f["id"]: f for f in d}
g = report["gpu"]["ranks"][0]
t = g["temporal"]
print(sys.argv[1].rsplit("/", 1)[-1], [(f["id"], round(f["share"], 3), f["expected_speedup"]) for f in d])
if t and t["span_us"]:
    idle = t["idle_us"] / t["span_us"]
    streams = g["idle_by_stream"]
    host_wait = sum(s["host_wait_us"] for s in streams) / sum(s["idle_us"] for s in streams)
    tiny = g["launch"]["tiny_kernels"] / g["launch"]["launches"]
    exposed = t["communication_us"] * (1 - (t["comm_comp_overlap"] or 0)) / t["span_us"]
def close(a, b):
    return abs(a - b) < 1e-6
def bound(f):
    return close(f["expected_speedup"], 1 / (1 - f["share"]))
device_ids = {"gpu_idle", "host_launch_bound", "communication_not_overlapped", "pageable_memcpy", "small_memcpy"}
exec(sys.argv[2])
PYEOF
}

# A recommendation model's rank: the device idles 46 % of the span, nearly all
# waiting for the host, and more than half its 17 832 launches are shorter
# than their launch call; 238 ms of all-to-all that no computation overlaps.
check dfir df_index_resolver/df_index_resolver.json.gz '
f = by["host_launch_bound"]
assert "gpu_idle" not in ids, ids
assert close(f["share"], idle) and 0.4 < idle < 0.5 and host_wait > 0.9 and tiny > 0.5, (f["share"], idle, host_wait, tiny)
assert bound(f) and f["severity"] == "high", f  # up to 1.85x
assert any("9688 of 17832 launches" in e for e in f["evidence"]), f["evidence"]
assert "CUDA graphs" in f["recommendation"] and "torch.compile" in f["recommendation"]
c = by["communication_not_overlapped"]
assert close(c["share"], exposed) and 0.15 < exposed < 0.2 and bound(c), (c["share"], exposed)
# 1 632 device-to-device copies, most under 64 KiB: not host-device copies.
assert "small_memcpy" not in ids and "pageable_memcpy" not in ids, ids
'

# Idle 77 %, host-launch-bound too; its communication is 4.7 % exposed: no finding.
check nccl nccl_parser_config/nccl_data.json.gz '
assert close(by["host_launch_bound"]["share"], idle), by["host_launch_bound"]
assert 0.04 < exposed < 0.05 and "communication_not_overlapped" not in ids, (exposed, ids)
'

# Idle 54 % but only 23 % of the kernels are tiny (the host runs 10 ms ahead):
# low utilization, not launch overhead; 29 % of the span is exposed communication.
check filter trace_filter/sampled_rank-0.json.gz '
assert "host_launch_bound" not in ids and close(by["gpu_idle"]["share"], idle) and tiny < 0.5, (ids, tiny)
c = by["communication_not_overlapped"]
assert close(c["share"], exposed) and 0.25 < exposed < 0.3 and ids[0] == "gpu_idle", (c, ids)
'

# AlexNet: 16 copies from pageable memory are 84 % of the device's busy time.
check alexnet critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz '
f = by["pageable_memcpy"]
htod = [m for m in g["memcpy"]["directions"] if m["direction"] == "HtoD"][0]
assert htod["pageable"] == 16 and htod["count"] == 16, htod
assert close(f["share"], htod["pageable_us"] / t["span_us"]) and htod["pageable_us"] / t["busy_us"] > 0.8, (f, htod)
assert any("16 of 16 copies (HtoD 16)" in e for e in f["evidence"]), f["evidence"]
assert "pin_memory" in f["recommendation"]
'

# No false alarms: busy devices (idle 2 % and 7 %, communication 9.4 % exposed),
# and copies that are neither pageable nor mostly small.
check busy ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz '
assert idle < 0.05 and not device_ids & set(ids), ids
'
check diff trace_diff/test/test.json.gz '
assert idle < 0.1 and 0.09 < exposed < 0.1 and not device_ids & set(ids), (exposed, ids)
small = sum(m["small"] for m in g["memcpy"]["directions"] if m["direction"] in ("HtoD", "DtoH"))
assert small > 0 and "small_memcpy" not in ids, small
'
# A trace without device activity: nothing from the device rules.
check cpu cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz 'assert t is None and not device_ids & set(ids), ids'

# Recorded GPU runs (tests/data/gpu, made on an H200). A recording holds the
# whole program, start-up included, so the device's idle time is measured over
# the steady steps, and what of it falls in the main thread's data waits is
# input_bound's: the share is recomputed here from the run's tables (read
# through tools/run_samples.py, the run format's reference decoder). The
# example with 0 workers is input-bound first (the launch overhead a smaller
# second); with 2 workers launch-bound alone; the MLP loop launch-bound.
for name in example-w0 example-w2 torch-loop; do
  gunzip -c "$STEPSCOPE_REPO/tests/data/gpu/$name.db.gz" > "$WORK/$name.db"
  expect_status 0 "$STEPSCOPE" report "$WORK/$name.db" --json -o "$WORK/$name.json"
  PYTHONPATH="$STEPSCOPE_REPO/tools" "$PY" - "$WORK/$name.db" "$WORK/$name.json" "$name" <<'PYEOF' || fail "$name: the device's idle time over steady steps"
import json, sys
from run_samples import open_with_samples
db, report, name = open_with_samples(sys.argv[1]), json.load(open(sys.argv[2])), sys.argv[3]
steps = report["steps"]
starts = db.execute("SELECT start_ns, end_ns FROM spans WHERE kind = 1 AND pid = ? ORDER BY start_ns",
                    (steps["pid"],)).fetchall()
start, end = starts[steps["warmup_steps"]][0], starts[-1][1]
def union(rows):
    merged = []
    for s, e in sorted((max(s, start), min(e, end)) for s, e in rows if e > start and s < end):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return merged
busy = union(db.execute("SELECT start_ns, end_ns FROM spans WHERE kind IN (9, 10, 11)"))
main_tid = db.execute("SELECT tid FROM spans WHERE kind = 1 AND pid = ? ORDER BY end_ns DESC LIMIT 1",
                      (steps["pid"],)).fetchone()[0]
waits = union(db.execute("SELECT start_ns, end_ns FROM spans WHERE kind = 2 AND pid = ? AND tid = ?",
                         (steps["pid"], main_tid)))
length = lambda xs: sum(e - s for s, e in xs)
both = sum(max(0, min(e1, e2) - max(s1, s2)) for s1, e1 in waits for s2, e2 in busy)
share = (end - start - length(busy) - (length(waits) - both)) / (end - start)
by = {f["id"]: f for f in report["diagnosis"]}
ids = [f["id"] for f in report["diagnosis"]]
f = by["host_launch_bound"]
print(name, [(i, round(by[i]["expected_speedup"], 2)) for i in ids], "recomputed share", round(share, 4))
assert abs(f["share"] - share) < 1e-9, (f["share"], share)
assert "of steady steps" in f["evidence"][0], f["evidence"]
if name == "example-w0":
    assert ids[0] == "input_bound" and "num_workers" in by["input_bound"]["recommendation"], ids
    assert "while the host waited for data" in f["evidence"][0], f["evidence"]
else:
    assert ids[0] == "host_launch_bound" and "input_bound" not in ids, ids
PYEOF
done
