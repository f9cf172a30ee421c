# Per-step host peaks (python/stepscope/_memory.py) against known allocations, in every
# Python: steps that touch 256 MiB peak 256 MiB above the rest, from getrusage(), and
# from /proc/self/status where the process exec'd from a larger image whose peak
# getrusage() would report instead.
source "$(dirname "$0")/lib.sh"
program="$STEPSCOPE_REPO/tests/integration/programs/step_peaks.py"

# Each step within 16 MiB of what it touched (the interpreter's own churn).
expected_peaks() {
  "$PY" -c '
import json, sys
peaks, want = json.loads(sys.argv[1]), [0, 0, 256, 0, 0, 256, 0, 0]
sys.exit(0 if len(peaks) == len(want) and all(abs(p - w) <= 16 for p, w in zip(peaks, want)) else 1)' "$1"
}

checked=0
while read -r python; do
  for mode in plain after-big; do
    status=0
    peaks=$("$python" "$program" "$mode") || status=$?
    if [ "$status" = 77 ]; then
      echo "skipped: /proc/self/clear_refs is not writable here"
      exit 0
    fi
    [ "$status" = 0 ] || fail "$python, $mode: step_peaks.py exited $status"
    expected_peaks "$peaks" \
      || fail "$python, $mode: per-step peaks above the start (MiB) $peaks, want 0 0 256 0 0 256 0 0"
    echo "$python, $mode: $peaks"
    checked=$((checked + 1))
  done
done < <(python_interpreters)
[ "$checked" -gt 0 ] || fail "no Python interpreter found"

# Under `record`, the peaks of steps after the last read (at most one per 100 ms) are
# read at exit and go to the last step: a step touching 64 MiB at the end is in the
# run's peak, 64 MiB above the first step's.
cd "$WORK"
"$STEPSCOPE" record -o late.db -- "$PY" "$STEPSCOPE_REPO/tests/integration/programs/late_peak.py" \
  || fail "record of late_peak.py failed"
"$STEPSCOPE" report late.db --json -o late.json || fail "report of late.db failed"
"$PY" - late.json <<'PYEOF' || fail "the late step's peak is not in the run: $(head -c 2000 late.json)"
import json, sys
steps = json.load(open(sys.argv[1]))["steps"]
peaks = [step["peak_host_bytes"] for step in steps["per_step"]]
assert len(peaks) == 20, peaks
assert peaks[-1] is not None, peaks  # read at exit, or by the last step itself
first = peaks[0]
assert steps["peak_host_memory_bytes"] >= first + 60 * (1 << 20), (first, steps["peak_host_memory_bytes"], peaks)
print("late peak: first step %d MiB, run %d MiB" % (first >> 20, steps["peak_host_memory_bytes"] >> 20))
PYEOF
echo "1 passed, 0 failed"
