# Steps and host diagnosis on torch.profiler traces: real traces exported by
# torch 2.x (the venv) and 1.13 (Debian's) from training loops, checked
# against computations on the raw JSON; and the HTA test traces, on which no
# host rule may fire where the numbers do not support it.
source "$(dirname "$0")/lib.sh"
program="$STEPSCOPE_REPO/tests/integration/programs/trace_training.py"
kineto=$KINETO
venv_python="$STEPSCOPE_REPO/.venv/bin/python"

# check TRACE PYTHON: reports TRACE as JSON, then runs PYTHON with `r` = the
# report, `ids` = the diagnosis ids in order, `raw` = the trace's events.
check() {
  expect_status 0 "$STEPSCOPE" report "$1" --json -o "$WORK/r.json"
  "$PY" - "$1" "$WORK/r.json" "$2" <<'PYEOF' || fail "$1: check failed: $2"
import gzip, json, sys
opener = gzip.open if sys.argv[1].endswith(".gz") else open
doc = json.load(opener(sys.argv[1]))
raw = [e for e in (doc["traceEvents"] if isinstance(doc, dict) else doc) if e.get("ph") == "X"]
r = json.load(open(sys.argv[2]))
ids = [f["id"] for f in r["diagnosis"]]
print(sys.argv[1].rsplit("/", 1)[-1], r["steps"].get("origin"), r["steps"].get("count"),
      [(f["id"], round(f["share"], 3)) for f in r["diagnosis"]])

def union(intervals):
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out

def clipped_total(intervals, start, end):
    return sum(max(0, min(e, end) - max(s, start)) for s, e in union(intervals))

def independent_steps():
    """Steady complete steps and the data-wait and optimizer shares, from the raw events."""
    host = [e for e in raw if e.get("cat") != "gpu_user_annotation"]
    ranges = sorted((e for e in host if e["name"].startswith("ProfilerStep#")), key=lambda e: e["ts"])
    complete = ranges[:-1] if len({e["name"] for e in ranges}) >= 2 else ranges
    steady = complete[min(max(len(complete) // 10, 1), 10) if len(complete) >= 2 else 0:]
    def on_thread(prefixes, step):
        return [(e["ts"], e["ts"] + e["dur"]) for e in host
                if e["tid"] == step["tid"] and e["name"].startswith(prefixes)]
    total = wait = opt = 0
    for step in steady:
        start, end = step["ts"], step["ts"] + step["dur"]
        total += end - start
        waits = on_thread("enumerate(DataLoader)#", step)
        wait += clipped_total(waits, start, end)
        # Optimizer time the data waits did not already claim.
        both = waits + on_thread(("Optimizer.step#", "Optimizer.zero_grad#"), step)
        opt += clipped_total(both, start, end) - clipped_total(waits, start, end)
    return complete, steady, wait / total, opt / total

exec(sys.argv[3])
PYEOF
}

# The step anatomy matches the raw trace: complete steps (the last range left
# out), steady time, data-wait and optimizer shares; throughput unknown.
anatomy='
complete, steady, wait, opt = independent_steps()
s = r["steps"]
assert s["origin"] == "profiler_steps" and s["count"] == len(complete) >= 8, s
assert s["last_range_left_out"] and s["profiler_ranges"] == len(complete) + 1, s
mean_ms = sum(e["dur"] for e in steady) / len(steady) / 1000
assert abs(s["step_time_ms"]["mean"] - mean_ms) < 1e-3 * mean_ms, (s["step_time_ms"], mean_ms)
assert abs(s["data_wait_fraction"] - wait) < 1e-4, (s["data_wait_fraction"], wait)
assert abs(s["phases"]["optimizer"] - opt) < 1e-4, (s["phases"], opt)
assert abs(sum(s["phases"].values()) - 1) < 1e-6, s["phases"]
assert s["samples_per_sec"] is None and s["tokens_per_sec"] is None, s
'
# A slow Dataset with num_workers=0: input_bound first, with the num_workers remedy.
slow='
first = r["diagnosis"][0]
assert first["id"] == "input_bound", ids
assert "num_workers=" in first["recommendation"], first
assert any("num_workers=0" in e for e in first["evidence"]), first["evidence"]
assert first["share"] == r["steps"]["data_wait_fraction"] >= 0.1, first
assert r["steps"]["loader_iterator"] == "_SingleProcessDataLoaderIter", r["steps"]
assert "python_overhead" not in ids, ids
'
fast='
assert "input_bound" not in ids and "python_overhead" not in ids, ids
assert r["steps"]["data_wait_fraction"] < 0.1, r["steps"]["phases"]
'
# Hundreds of tiny operations with Python between them, on the CPU.
tiny='
f = r["diagnosis"][0]
assert f["id"] == "python_overhead", ids
assert f["share"] >= 0.2 and f["expected_speedup"] > 1.25, f
assert any("no device activity in the trace" in e for e in f["evidence"]), f["evidence"]
assert "torch.compile" in f["recommendation"], f
'
big='
assert "python_overhead" not in ids, ids
'

passed=0
mkdir -p "$WORK/t2" "$WORK/t1"
expect_status 0 "$venv_python" "$program" "$WORK/t2" slow fast tiny big
for case in slow fast tiny big; do
  check "$WORK/t2/$case.json" "$anatomy${!case}"
  passed=$((passed + 1))
done
# PyTorch 1.13's profiler (Debian's python3-torch), when installed.
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  expect_status 0 /usr/bin/python3 "$program" "$WORK/t1" slow fast tiny
  for case in slow fast tiny; do
    check "$WORK/t1/$case.json" "$anatomy${!case}"
    passed=$((passed + 1))
  done
fi

# The terminal report says where the steps came from.
expect_status 0 "$STEPSCOPE" report "$WORK/t2/slow.json"
grep -q "from          the trace's ProfilerStep#N ranges (9 of 10" "$WORK/stdout" || fail "origin line: $(cat "$WORK/stdout")"
grep -q "throughput  unknown (a trace has no batch sizes)" "$WORK/stdout" || fail "throughput line: $(cat "$WORK/stdout")"

# The HTA test traces. By hand (docs/diagnosis.md): no data wait worth a
# finding in any of them, and no Python overhead: where operators are tiny the
# device is busy (trace_diff), or the device side was stripped from the trace
# (rank_non_gpu: NCCL collectives, no kernels).
quiet='
assert "input_bound" not in ids and "python_overhead" not in ids, ids
if r["steps"]["count"]:
    complete, steady, wait, opt = independent_steps()
    assert r["steps"]["count"] == len(complete), r["steps"]
    assert abs(r["steps"]["data_wait_fraction"] - wait) < 1e-4, (r["steps"]["data_wait_fraction"], wait)
'
if have_kineto; then
for trace in \
    ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz \
    trace_diff/control/control.json.gz \
    negative_queue_length_values_check/rank0.json.gz \
    nccl_parser_config/nccl_data.json.gz \
    rank_non_gpu/rank_non_gpu.json.gz \
    cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz \
    amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz \
    call_stack/backward_thread.json; do
  check "$kineto/$trace" "$quiet"
  passed=$((passed + 1))
done
# A real optimizer-heavy step: Shampoo and an EMA take a third of the one
# complete step of trace_filter's rank 0 (by hand: 190.9 + 13.3 of 607.3 ms).
check "$kineto/trace_filter/sampled_rank-0.json.gz" '
complete, steady, wait, opt = independent_steps()
f = r["diagnosis"][ids.index("optimizer_heavy")]
assert abs(f["share"] - opt) < 1e-4 and 0.33 < opt < 0.34, (f["share"], opt)
assert any("optimizer ranges run foreach operators (aten::_foreach_" in e for e in f["evidence"]), f["evidence"]
'
# The backward runs on its own thread in the GPU traces: the phase is there.
check "$kineto/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz" '
p = r["steps"]["phases"]
assert p["backward"] > 0.3 and p["forward"] > 0.2 and p["optimizer"] > 0, p
'
fi
echo "$passed passed, 0 failed"
