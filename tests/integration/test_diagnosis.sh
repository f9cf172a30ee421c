# Diagnosis on real programs: each rule that can be provoked on a CI machine
# fires on a program that has its mechanism and stays quiet on those that do
# not. The example language model without DataLoader workers must be
# input_bound first with a num_workers remedy; with workers it must not be.
source "$(dirname "$0")/lib.sh"
cases="$STEPSCOPE_REPO/tests/integration/programs/diagnosis_cases.py"
require_venv_torch

# record NAME ARGS...: records ARGS into $WORK/NAME.db and writes its report JSON.
record() {
  local name=$1; shift
  expect_status 0 "$STEPSCOPE" record -o "$WORK/$name.db" -- "$venv_python" "$@"
  expect_status 0 "$STEPSCOPE" report "$WORK/$name.db" --json -o "$WORK/$name.json"
}

# check NAME PYTHON: runs PYTHON with `d` = the report's diagnosis list and
# `ids` = its ids in order; a failed assert fails the test.
check() {
  "$PY" - "$WORK/$1.json" "$2" <<'PYEOF' || fail "$1: diagnosis check failed: $2"
import json, sys
report = json.load(open(sys.argv[1]))
d = report["diagnosis"]
ids = [f["id"] for f in d]
print(sys.argv[1].rsplit("/", 1)[-1], [(f["id"], round(f["share"], 3), f["expected_speedup"]) for f in d])
exec(sys.argv[2])
PYEOF
}

# The example with a tokenizer-heavy input (a tiny model, so tokenizing is a
# large part of each step), without workers and with two. Batches of 16 keep
# the optimizer (a fixed cost per step) near 6% of the step, far below the
# optimizer_heavy threshold even on a loaded machine (batches of 8: 10-15%,
# and 20% once at load 12).
lm_args=("$STEPSCOPE_REPO/examples/train_lm.py" --steps 30 --batch-size 16 --threads 1 --d-model 16 --layers 2 --merges 64)
record lm0 "${lm_args[@]}" --num-workers 0
record lm2 "${lm_args[@]}" --num-workers 2

check lm0 '
first = d[0]
assert first["id"] == "input_bound", ids
assert "num_workers=" in first["recommendation"], first["recommendation"]
wait = report["steps"]["data_wait_fraction"]
assert first["share"] == wait and wait >= 0.1, (first["share"], wait)
assert 1 <= first["expected_speedup"] <= 1 / (1 - wait) + 1e-9, first
assert any("encode" in e or "merge_pair" in e for e in first["evidence"]), first["evidence"]
assert any("num_workers=0" in e for e in first["evidence"]), first["evidence"]
'
# With workers, no input_bound: batches come from the workers. (On a loaded
# machine the wait may remain with no core idle: dataloader_workers_saturated.)
check lm2 '
assert "input_bound" not in ids, ids
wait = report["steps"]["data_wait_fraction"]
assert wait < 0.1 or "dataloader_workers_saturated" in ids, (wait, ids)
'
# No false alarms on the example: it logs by print every 10 steps, has a
# light optimizer, little memory, and the sampler marks no GC.
for run in lm0 lm2; do
  check $run '
for quiet in ("logging_overhead", "optimizer_heavy", "gc_pauses", "memory_pressure", "io_bound_workers"):
    assert quiet not in ids, (quiet, ids)
'
done

# Logging a formatted tensor every step, AdamW's for-loop over 402 tensors,
# and gc.collect() every step. 50 steps give the logging rule about 20 samples
# (20 steps gave 8-11, and once too few for it to fire).
# The loop's own 10 ms of work between backward and the optimizer step is about a
# fifth of the step, at step_overhead's threshold once logging and collections are
# left to their rules: that rule may fire, naming it.
record host "$cases" host --steps 50
check host '
assert sorted(i for i in ids if i != "step_overhead") == ["gc_pauses", "logging_overhead", "optimizer_heavy"], ids
if "step_overhead" in ids:
    over = d[ids.index("step_overhead")]
    assert any("compute (" in e for e in over["evidence"]), over["evidence"]
gc = d[ids.index("gc_pauses")]
assert any("timed by gc.callbacks" in e for e in gc["evidence"]), gc["evidence"]
log = d[ids.index("logging_overhead")]
assert any("diagnosis_cases.py:" in e for e in log["evidence"]), log["evidence"]
opt = d[ids.index("optimizer_heavy")]
assert opt["share"] == report["steps"]["phases"]["optimizer"] >= 0.2, opt
assert any("_single_tensor_" in e for e in opt["evidence"]), opt["evidence"]
assert "fused=True" in opt["recommendation"]
speedups = [f["expected_speedup"] for f in d if f["expected_speedup"] is not None]
assert speedups == sorted(speedups, reverse=True), speedups
'

# A checkpoint saved every step: the rest of the step, named with its kind, the
# line of the loop that saves, and the remedy for it.
record checkpoint "$cases" checkpoint --steps 40
check checkpoint '
assert ids[0] == "step_overhead", ids
over = d[0]
assert 0.2 <= over["share"] <= report["steps"]["phases"]["other"] + 1e-9, over
assert any("torch/serialization.py" in e and "called from save_checkpoint (" in e for e in over["evidence"]), over["evidence"]
assert any("of these samples save checkpoints" in e for e in over["evidence"]), over["evidence"]
assert "async_save" in over["recommendation"], over["recommendation"]
'

# Two workers spinning on two cores: saturated, not input_bound; and a loop
# that neither logs nor has a heavy optimizer.
record saturated "$cases" saturated --steps 20
check saturated '
assert ids and ids[0] == "dataloader_workers_saturated", ids
assert "more workers will not help" in d[0]["recommendation"]
assert any("DataLoader workers: 2 processes" in e for e in d[0]["evidence"]), d[0]["evidence"]
for quiet in ("input_bound", "logging_overhead", "optimizer_heavy"):
    assert quiet not in ids, (quiet, ids)
'

# Synchronizations in the loop, on real torch.profiler traces: a TorchRec job
# whose .to("cpu") copies idle the device 3% of each step, and one whose 10
# syncs a step cost nothing (another stream keeps the device busy).
kineto=$KINETO
if have_kineto; then
expect_status 0 "$STEPSCOPE" report "$kineto/negative_queue_length_values_check/rank0.json.gz" --json -o "$WORK/nq.json"
check nq '
assert "sync_in_loop" in ids, ids  # the device-side findings: tests/integration/test_diagnosis_gpu.sh
f = d[ids.index("sync_in_loop")]
assert 0.03 <= f["share"] < 0.04, f["share"]
# The steady steps: of 5 ProfilerStep ranges the last is cut short, the first warm-up.
assert report["steps"]["origin"] == "profiler_steps" and report["steps"]["count"] == 4, report["steps"]["count"]
assert any("45 synchronizations in 3 steps (15.0 per step): cudaStreamSynchronize (45x)" in e for e in f["evidence"]), f["evidence"]
assert any("inside aten::to > aten::copy_ (45x)" in e for e in f["evidence"]), f["evidence"]
assert ".item()" in f["recommendation"]
'
expect_status 0 "$STEPSCOPE" report "$kineto/trace_diff/test/test.json.gz" --json -o "$WORK/busy.json"
check busy 'assert "sync_in_loop" not in ids, ids'

# Host collectives, on a real CPU training trace: two gloo threads all-reduce
# while the step thread runs no operator. The share is computed again here
# from the trace's own events: the gloo spans' union inside the step, less
# the step thread's operators, over the step's length.
cpu_trace="$kineto/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
expect_status 0 "$STEPSCOPE" report "$cpu_trace" --json -o "$WORK/gloo.json"
check gloo '
import gzip
events = [e for e in json.load(gzip.open("'"$cpu_trace"'"))["traceEvents"] if e.get("ph") == "X"]
step = next(e for e in events if e["name"].startswith("ProfilerStep#"))
lo, hi = step["ts"], step["ts"] + step["dur"]
def union(spans):
    out = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]: out[-1][1] = max(out[-1][1], b)
        else: out.append([a, b])
    return out
comm = union([(max(e["ts"], lo), min(e["ts"] + e["dur"], hi)) for e in events
              if e["name"].startswith("gloo:") and e["ts"] < hi and e["ts"] + e["dur"] > lo])
ops = union([(e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") == "cpu_op" and e["tid"] == step["tid"]])
covered = sum(max(0, min(b, d) - max(a, c)) for a, b in comm for c, d in ops)
share = (sum(b - a for a, b in comm) - covered) / step["dur"]
assert ids == ["host_collectives"], ids
f = d[0]
assert abs(f["share"] - share) < 1e-4 and f["share"] > 0.8, (f["share"], share)
assert any("on 2 threads: gloo:all_reduce (2x)" in e for e in f["evidence"]), f["evidence"]
assert "no_sync()" in f["recommendation"]
'
# GPU traces with NCCL collectives (on the device) are not host collectives.
expect_status 0 "$STEPSCOPE" report "$kineto/df_index_resolver/df_index_resolver.json.gz" --json -o "$WORK/nccl.json"
check nccl 'assert "host_collectives" not in ids, ids'
fi

# The terminal report: the verdict comes first, plain when piped, colored on request.
expect_status 0 "$STEPSCOPE" report "$WORK/lm0.db"
verdict=$(grep -n '^Verdict: ' "$WORK/stdout" | head -n 1)
[ "${verdict%%:*}" -le 6 ] || fail "the verdict is not on the first lines: $verdict"
grep -q '^Verdict: Input-bound' "$WORK/stdout" || fail "verdict: $verdict"
if grep -q $'\x1b' "$WORK/stdout"; then fail "escape sequences in piped output"; fi
expect_status 0 "$STEPSCOPE" report "$WORK/lm0.db" --color always
grep -q $'\x1b\\[1mVerdict' "$WORK/stdout" || fail "--color always did not color the verdict"
expect_status 2 "$STEPSCOPE" report "$WORK/lm0.db" --color sometimes
# -o onto something that is not a regular file (a FIFO here; /dev/null for
# users) writes into it, and never replaces it with a file.
mkfifo "$WORK/fifo"
cat "$WORK/fifo" > "$WORK/from_fifo" &
reader=$!
expect_status 0 "$STEPSCOPE" report "$WORK/lm0.db" --json -o "$WORK/fifo"
wait "$reader"
[ -p "$WORK/fifo" ] || fail "-o replaced a FIFO with a file"
grep -q '"diagnosis"' "$WORK/from_fifo" || fail "-o FIFO: nothing came through"

echo "1 passed, 0 failed"
