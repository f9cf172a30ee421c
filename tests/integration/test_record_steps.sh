# Step anatomy from the in-process hooks, with real PyTorch (the .venv's):
# step counts, throughput against the program's own, data wait with and
# without workers, no torch, a failing hook, and the explicit API.
source "$(dirname "$0")/lib.sh"
programs="$STEPSCOPE_REPO/tests/integration/programs"
check="$STEPSCOPE_REPO/tests/integration/check_steps.py"
venv_python="$STEPSCOPE_REPO/.venv/bin/python"
# The binary may be built outside the checkout (ctest --test-dir elsewhere).
export STEPSCOPE_PYTHON_DIR="$STEPSCOPE_REPO/python"

# A field of `report --json`'s steps object, by a Python expression on `s`.
steps_field() { "$PY" -c "import json,sys; s=json.load(open(sys.argv[1]))['steps']; print($2)" "$1"; }

# The explicit API works without torch, in any Python.
python=$(python_interpreters | tail -n 1)
expect_status 0 "$STEPSCOPE" record -o "$WORK/explicit.db" -- "$python" "$programs/explicit_steps.py"
grep -q "torch imported: False" "$WORK/stdout" || fail "explicit_steps.py imported torch: $(cat "$WORK/stdout")"
[ "$("$PY" "$check" "$WORK/explicit.db" count)" = 6 ] || fail "explicit API: not 6 steps"
expect_status 0 "$STEPSCOPE" report "$WORK/explicit.db" --json -o "$WORK/explicit.json"
[ "$(steps_field "$WORK/explicit.json" "s['per_step'][-1]['tokens']")" = 4096 ] || fail "explicit tokens lost"
[ -n "$(run_sql "$WORK/explicit.db" "SELECT 1 FROM spans s JOIN strings n ON n.id = s.name WHERE s.kind = 6 AND n.value = 'work <phase>'")" ] \
  || fail "stepscope.range span missing"
# A burst of steps faster than the recorder drains its queue: every step is either in the
# run or counted as dropped, including those still waiting in the process at exit. (The
# dropped records may also hold the burst's memory readings: one at its first step, one
# at exit.)
expect_status 0 "$STEPSCOPE" record -o "$WORK/burst.db" -- "$python" -c '
import stepscope
for i in range(3000): stepscope.step(samples=1)'
kept=$("$PY" "$check" "$WORK/burst.db" count)
dropped=$(sqlite3 "$WORK/burst.db" "SELECT COALESCE(MAX(value), 0) FROM metadata WHERE key = 'hooks_dropped_records'")
[ "$kept" -le 3000 ] && [ $((kept + dropped)) -ge 3000 ] && [ $((kept + dropped)) -le 3002 ] \
  || fail "a burst of 3000 steps: $kept kept, $dropped counted as dropped"
# The explicit API is a no-op outside record.
PYTHONPATH="$STEPSCOPE_REPO/python" "$python" "$programs/explicit_steps.py" > /dev/null \
  || fail "the explicit API failed outside record"

# A program that never imports torch records no steps, and report says so.
expect_status 0 "$STEPSCOPE" record -o "$WORK/plain.db" -- "$python" -c 'print("hello")'
[ "$(cat "$WORK/stdout")" = hello ] || fail "the hooks changed a plain program's output"
expect_status 0 "$STEPSCOPE" report "$WORK/plain.db"
grep -q "Steps: none recorded" "$WORK/stdout" || fail "report does not say there are no steps"
expect_status 0 "$STEPSCOPE" report "$WORK/plain.db" --json -o "$WORK/plain.json"
[ "$(steps_field "$WORK/plain.json" "s['count']")" = 0 ] || fail "JSON steps.count is not 0"

if ! "$venv_python" -c 'import torch' 2>/dev/null; then
  echo "skipped: no torch in $venv_python (run scripts/setup)"
  exit 0
fi

# The example with and without workers: the steps it ran, and its own throughput.
for workers in 0 2; do
  db="$WORK/lm$workers.db"
  expect_status 0 "$STEPSCOPE" record -o "$db" -- "$venv_python" "$STEPSCOPE_REPO/examples/train_lm.py" \
    --steps 12 --batch-size 8 --threads 1 --merges 32 --num-workers "$workers"
  summary=$(grep '^summary: ' "$WORK/stdout" | sed 's/^summary: //')
  [ -n "$summary" ] || fail "train_lm printed no summary"
  [ "$("$PY" "$check" "$db" count)" = 12 ] || fail "workers=$workers: $("$PY" "$check" "$db" count) steps, not 12"
  # The program's command line, not "[python]": torch's exit tears down a
  # large address space, and the command line reads empty meanwhile.
  command=$(sqlite3 "$db" 'SELECT s.value FROM processes p JOIN strings s ON s.id = p.command WHERE p.id = 0')
  case "$command" in
    *examples/train_lm.py*) ;;
    *) fail "workers=$workers: the program's command was recorded as '$command'" ;;
  esac
  expect_status 0 "$STEPSCOPE" report "$db" --json -o "$WORK/lm$workers.json"
  # The program's own figure includes one-off set-up before its first step
  # (AdamW's lazy imports take seconds): steady steps are at least as fast,
  # within the 3% that a loaded machine's noise can move either figure.
  "$PY" - "$WORK/lm$workers.json" "$summary" <<'PYEOF' || fail "workers=$workers: steps disagree"
import json, sys
steps = json.load(open(sys.argv[1]))["steps"]
own = json.loads(sys.argv[2])["samples_per_s"]
assert all(r["samples"] == 8 and r["tokens"] == 8 * 64 for r in steps["per_step"]), steps["per_step"]
assert steps["samples_per_sec"] > own * 0.97, (steps["samples_per_sec"], own)
phases = steps["phases"]
assert phases["forward"] > 0 and phases["backward"] > 0 and phases["optimizer"] > 0, phases
assert abs(sum(phases.values()) - 1) < 1e-6, phases
assert steps["peak_host_memory_bytes"] > 0
PYEOF
  expect_status 0 "$STEPSCOPE" report "$db"
  grep -q "Steps of pid" "$WORK/stdout" || fail "the text report has no steps section"
done
kinds=$("$PY" "$check" "$WORK/lm2.db" kinds)
"$PY" -c "import json,sys; k=json.loads(sys.argv[1]); sys.exit(0 if k.get('0', 0) >= 12 else 1)" "$kinds" \
  || fail "no per-worker batch spans with workers: $kinds"

# A slow Dataset: most of a step is data wait without workers, much less with them.
for workers in 0 2; do
  expect_status 0 "$STEPSCOPE" record -o "$WORK/slow$workers.db" -- "$venv_python" "$programs/slow_dataset.py" \
    --num-workers "$workers"
  summary=$(grep '^summary: ' "$WORK/stdout" | sed 's/^summary: //')
  expect_status 0 "$STEPSCOPE" report "$WORK/slow$workers.db" --json -o "$WORK/slow$workers.json"
  # samples/s over all steps agrees with the program's own measurement of the same loop.
  "$PY" - "$WORK/slow$workers.json" "$summary" <<'PYEOF' \
    || fail "slow dataset, workers=$workers: samples/s disagrees with the program's"
import json, sys
steps, own = json.load(open(sys.argv[1]))["steps"], json.loads(sys.argv[2])
rows = steps["per_step"]
assert len(rows) == own["steps"] == 12, (len(rows), own)
rate = sum(r["samples"] for r in rows) / (sum(r["time_ns"] for r in rows) / 1e9)
print("program %.2f samples/s, steps %.2f" % (own["samples_per_s"], rate))
assert abs(rate - own["samples_per_s"]) / own["samples_per_s"] < 0.03
PYEOF
done
wait0=$(steps_field "$WORK/slow0.json" "s['data_wait_fraction']")
wait2=$(steps_field "$WORK/slow2.json" "s['data_wait_fraction']")
echo "slow dataset: data wait $wait0 without workers, $wait2 with 2"
"$PY" -c "import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if a > 0.3 and b < a * 0.6 else 1)" "$wait0" "$wait2" \
  || fail "data wait share: $wait0 without workers, $wait2 with 2"
steps_field "$WORK/slow0.json" "[f['name'] for f in s['samples']['data_wait_functions']]" | grep -q . \
  || fail "no data-wait functions attributed"

# A closure optimizer (LBFGS) runs forward and backward inside optimizer.step(): they
# are forward and backward time, not optimizer time, and the phases add up to the step.
expect_status 0 "$STEPSCOPE" record -o "$WORK/lbfgs.db" -- "$venv_python" "$programs/closure_optimizer.py"
[ "$("$PY" "$check" "$WORK/lbfgs.db" count)" = 12 ] || fail "LBFGS: not 12 steps"
expect_status 0 "$STEPSCOPE" report "$WORK/lbfgs.db" --json -o "$WORK/lbfgs.json"
"$PY" - "$WORK/lbfgs.json" <<'PYEOF' || fail "LBFGS: phases overlap or miss the closure's work"
import json, sys
steps = json.load(open(sys.argv[1]))["steps"]
phases = steps["phases"]
print("LBFGS phases:", phases)
assert abs(sum(phases.values()) - 1) < 1e-6, phases
assert phases["forward"] > 0 and phases["backward"] > 0, phases
for row in steps["per_step"]:
    measured = sum(row[p + "_ns"] for p in ("data_wait", "forward", "backward", "optimizer"))
    assert measured <= row["time_ns"] and measured + row["other_ns"] == row["time_ns"], row
PYEOF

# Mixed precision: GradScaler skips optimizer.step after an overflow (2 of 10 steps);
# those are still steps.
expect_status 0 "$STEPSCOPE" record -o "$WORK/scaler.db" -- "$venv_python" "$programs/grad_scaler.py"
grep -q "optimizer steps run: 8" "$WORK/stdout" || fail "grad_scaler.py did not skip 2 steps: $(cat "$WORK/stdout")"
[ "$("$PY" "$check" "$WORK/scaler.db" count)" = 10 ] || fail "GradScaler: $("$PY" "$check" "$WORK/scaler.db" count) steps, not 10"

# Gradient accumulation: a step is an optimizer step, with the samples and tokens of
# its 4 micro-batches.
expect_status 0 "$STEPSCOPE" record -o "$WORK/accumulate.db" -- "$venv_python" "$programs/grad_accumulation.py"
expect_status 0 "$STEPSCOPE" report "$WORK/accumulate.db" --json -o "$WORK/accumulate.json"
"$PY" - "$WORK/accumulate.json" <<'PYEOF' || fail "gradient accumulation: steps or their samples are wrong"
import json, sys
rows = json.load(open(sys.argv[1]))["steps"]["per_step"]
assert [(r["samples"], r["tokens"]) for r in rows] == [(32, 32 * 32)] * 6, rows
PYEOF

# Two optimizers stepping in turn (a GAN): one step per batch, ending at the second.
expect_status 0 "$STEPSCOPE" record -o "$WORK/gan.db" -- "$venv_python" "$programs/two_optimizers.py"
expect_status 0 "$STEPSCOPE" report "$WORK/gan.db" --json -o "$WORK/gan.json"
PYTHONPATH="$STEPSCOPE_REPO/tools" "$PY" - "$WORK/gan.json" "$WORK/gan.db" <<'PYEOF' || fail "two optimizers: not one step per batch"
import json, sys
from run_samples import open_with_samples
rows = json.load(open(sys.argv[1]))["steps"]["per_step"]
assert [r["samples"] for r in rows] == [16] * 12, rows
db = open_with_samples(sys.argv[2])  # the run format's reference decoder
# Each step ends where the generator's optimizer step (the second of its two) ends.
ends = [e for (e,) in db.execute("SELECT end_ns FROM spans WHERE kind = 5 ORDER BY start_ns")]
steps = [e for (e,) in db.execute("SELECT end_ns FROM spans WHERE kind = 1 ORDER BY start_ns")]
assert len(ends) == 24 and steps == ends[1::2], (len(ends), steps[:3], ends[:4])
PYEOF

# A hook that fails: one warning, the rest of the hooks and the program unchanged.
status=0
"$venv_python" "$programs/hook_failure.py" > "$WORK/bare.out" 2> "$WORK/bare.err" || status=$?
[ "$status" -eq 3 ] || fail "hook_failure.py exited $status without record"
expect_status 3 "$STEPSCOPE" record -o "$WORK/fail.db" -- "$venv_python" "$programs/hook_failure.py"
cmp -s "$WORK/stdout" "$WORK/bare.out" || fail "a failing hook changed the program's output"
[ "$(grep -c 'stepscope: hook cuda_memory disabled' "$WORK/stderr")" = 1 ] \
  || fail "expected one warning: $(cat "$WORK/stderr")"
[ "$("$PY" "$check" "$WORK/fail.db" count)" = 5 ] || fail "steps lost after a hook failed"
"$PY" "$check" "$WORK/fail.db" meta hooks_disabled | grep -q cuda_memory || fail "hooks_disabled not in metadata"

echo "1 passed, 0 failed"
