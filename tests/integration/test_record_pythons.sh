# record on every CPython we support: the profile of a program with a known
# CPU split agrees with the truth, and children started by fork and by
# multiprocessing's spawn are sampled.
source "$(dirname "$0")/lib.sh"
programs="$STEPSCOPE_REPO/tests/integration/programs"
check="$STEPSCOPE_REPO/tests/integration/check_record.py"

interpreters=$(python_interpreters)
[ -n "$interpreters" ] || fail "no CPython interpreter found"
tested=0
for python in $interpreters; do
  version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  echo "== $python ($version)"

  expect_status 0 "$STEPSCOPE" record -o "$WORK/split.db" --rate 250 -- "$python" "$programs/known_split.py" 2.0
  truth=$(tail -n 1 "$WORK/stdout")
  measured=$("$PY" "$check" "$WORK/split.db" shares heavy light)
  echo "   truth $truth, measured $measured"
  "$PY" - "$truth" "$measured" <<'PYEOF' || fail "$version: profile disagrees with the truth"
import json, sys
truth, measured = json.loads(sys.argv[1]), json.loads(sys.argv[2])
error = abs(truth["heavy"] - measured["heavy"])
sys.exit(0 if error < 0.06 else 1)
PYEOF

  expect_status 0 "$STEPSCOPE" record -o "$WORK/tree.db" -- "$python" "$programs/process_tree.py"
  root=$(sqlite3 "$WORK/tree.db" "SELECT pid FROM processes ORDER BY id LIMIT 1")
  forked=$("$PY" "$check" "$WORK/tree.db" has forked_child_work) || fail "$version: forked child not sampled"
  spawned=$("$PY" "$check" "$WORK/tree.db" has spawned_worker_work) || fail "$version: spawned worker not sampled"
  [ "$forked" != "$root" ] && [ "$spawned" != "$root" ] || fail "$version: child work attributed to the parent"
  state=$("$PY" "$check" "$WORK/tree.db" thread-state idle_waiter)
  [ "$state" = idle ] || fail "$version: the waiting thread was $state, not idle"
  tested=$((tested + 1))
done
echo "$tested passed, 0 failed"
