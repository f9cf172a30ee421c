# report, export and compare --window on a recorded training loop: a window of steps is those
# steps exactly, as the whole run's report measured them; a window's profile holds exactly the
# samples the run file has in it (counted with tools/run_samples.py); compare takes the same window of both
# runs; bad windows are errors that name the run's range; a run too large for the memory at hand
# is refused with a window that fits.
source "$(dirname "$0")/lib.sh"
require_venv_torch

expect_status 0 "$STEPSCOPE" record -o "$WORK/run.db" -- "$venv_python" \
  "$STEPSCOPE_REPO/tests/integration/programs/metrics_training.py" --steps 60 --linger 0
"$STEPSCOPE" report --json "$WORK/run.db" > "$WORK/whole.json"
expect_status 0 "$STEPSCOPE" report --json "$WORK/run.db" --window steps:11:30
cp "$WORK/stdout" "$WORK/window.json"
"$PY" - "$WORK/whole.json" "$WORK/window.json" <<'PYEOF' || fail "the window's steps are not steps 11 to 30"
import json, sys
whole, window = (json.load(open(p))["steps"] for p in sys.argv[1:])
assert window["count"] == 20, window["count"]
strip = lambda s: {k: v for k, v in s.items() if k != "warmup"}
assert [strip(s) for s in window["per_step"]] == [strip(s) for s in whole["per_step"][10:30]], "steps differ"
assert window["warmup_steps"] == 2, window["warmup_steps"]  # the warm-up rule, on 20 steps
PYEOF

# The window's profile: every sample the run file holds between step 11's start and step 30's end.
bounds=$("$PY" -c '
import json, sys
steps = json.load(open(sys.argv[1]))["steps"]["per_step"]
print(steps[10]["start_ns"], steps[29]["start_ns"] + steps[29]["time_ns"])' "$WORK/whole.json")
read -r from to <<< "$bounds"
in_file=$(run_sql "$WORK/run.db" "SELECT COUNT(*) FROM samples WHERE ts_ns >= $from AND ts_ns < $to")
expect_status 0 "$STEPSCOPE" export "$WORK/run.db" --format collapsed --idle --window steps:11:30
exported=$(awk '{n += $NF} END {print n + 0}' "$WORK/stdout")
[ "$exported" = "$in_file" ] && [ "$in_file" -gt 0 ] || fail "the window's profile has $exported samples, the file $in_file"
whole_samples=$("$STEPSCOPE" export "$WORK/run.db" --format collapsed --idle | awk '{n += $NF} END {print n + 0}')
[ "$exported" -lt "$whole_samples" ] || fail "the window kept all $whole_samples samples"

# A window counted from the end: only the steps that started in it. How long the program takes to
# exit after its last step varies, so the window reaches back to step 51's start from the run's
# end (which `--window 0:` notes as its end, plus 1 ns).
end_ns=$("$STEPSCOPE" report --json "$WORK/run.db" --window 0: | "$PY" -c '
import json, sys
print(int(json.load(sys.stdin)["metadata"]["window_ns"].split(":")[1]) - 1)')
back=$("$PY" -c '
import json, sys
start = json.load(open(sys.argv[1]))["steps"]["per_step"][50]["start_ns"]
print(f"-{(int(sys.argv[2]) - start) / 1e9 + 0.0005:.3f}:")' "$WORK/whole.json" "$end_ns")
expect_status 0 "$STEPSCOPE" report --json "$WORK/run.db" --window "$back"
"$PY" - "$WORK/whole.json" "$WORK/stdout" <<'PYEOF' || fail "the steps of --window $back"
import json, sys
whole, last = (json.load(open(p))["steps"] for p in sys.argv[1:])
assert last["count"] == 10, last["count"]  # steps 51 to 60
assert [s["start_ns"] for s in last["per_step"]] == [s["start_ns"] for s in whole["per_step"][50:]]
PYEOF

# compare: the same window of both runs.
expect_status 0 "$STEPSCOPE" compare "$WORK/run.db" "$WORK/run.db" --json --window steps:11:30
"$PY" -c '
import json, sys
doc = json.load(open(sys.argv[1]))
sides = [doc["base"], doc["cur"]]
assert all(s["steps"] == 20 for s in sides), sides' "$WORK/stdout" || fail "compare --window: $(head -c 600 "$WORK/stdout")"

# Bad windows: exit 2, naming the run's range.
for window in 9999:10000 5:2 1:x steps:0:3 steps:50:70; do
  expect_status 2 "$STEPSCOPE" report "$WORK/run.db" --window "$window"
  expect_stderr_contains "$WORK/run.db: --window $window:"
  expect_stderr_contains "and steps 1 to 60"
done
expect_status 2 "$STEPSCOPE" compare --baseline last "$WORK/run.db" --window steps:1:5
expect_stderr_contains "a --baseline from the history is a whole run"
# A run too large for the memory the command may have (here `ulimit -d`, as a day of eight ranks
# against a machine's memory): refused before reading, naming the bound and a window that fits,
# which then reads under the same limit. 30 minutes of 8 ranks made from the run above: 1.3 M
# samples, about 230 MiB to report on whole.
long_run="$(dirname "$STEPSCOPE")/bench/stepscope_long_run"
[ -x "$long_run" ] || fail "no $long_run: it is built with stepscope"
"$long_run" "$WORK/run.db" "$WORK/long.db" 8 0.5 > /dev/null || fail "$long_run"
limit=$((96 << 20))
expect_status 2 prlimit --data=$limit "$STEPSCOPE" report "$WORK/long.db"
expect_stderr_contains "$WORK/long.db: reading it whole takes about"
expect_stderr_contains "the data-segment limit (ulimit -d) leaves"
window=$(grep -o -- '--window -[0-9]*:' "$WORK/stderr" | cut -d' ' -f2)
[ -n "$window" ] || fail "no window suggested: $(cat "$WORK/stderr")"
expect_status 0 prlimit --data=$limit "$STEPSCOPE" report --json "$WORK/long.db" --window "$window"
expect_status 0 prlimit --data=$limit "$STEPSCOPE" export "$WORK/long.db" --format collapsed --window "$window"
expect_status 2 prlimit --data=$limit "$STEPSCOPE" export "$WORK/long.db" --format collapsed
expect_stderr_contains "reading it whole takes about"
expect_status 0 "$STEPSCOPE" report --json "$WORK/long.db"  # without the limit, whole
echo "1 passed, 0 failed"
