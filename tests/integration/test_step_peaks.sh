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
echo "1 passed, 0 failed"
