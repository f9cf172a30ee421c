# record on every CPython we support: the profile of a program with a known
# CPU split agrees with the truth, children started by fork and by
# multiprocessing's spawn are sampled, a sleeping thread's stack (kept
# unread while the thread does not run) follows it from sleep to sleep, and
# a generator that C code resumes again and again keeps its callers.
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

  expect_status 0 "$STEPSCOPE" record -o "$WORK/phases.db" --rate 200 -- "$python" "$programs/waiting_phases.py" 0.4
  phases=$("$PY" "$check" "$WORK/phases.db" phases first_wait second_wait third_wait)
  kept=$(sqlite3 "$WORK/phases.db" "SELECT value FROM metadata WHERE key = 'sampler_stacks_kept'")
  echo "   sleeping thread's phases: $phases; stacks kept unread: $kept"
  [ "${kept:-0}" -gt 100 ] || fail "$version: the sleeping threads' stacks were read at every round"
  "$PY" - "$phases" <<'PYEOF' || fail "$version: a sleeping thread's samples do not follow its phases"
import json, sys
phases = json.loads(sys.argv[1])
total = sum(phases["counts"])
sys.exit(0 if phases["ordered"] and total > 0 and min(phases["counts"]) > 0.2 * total else 1)
PYEOF
  # A generator's frame links to its caller only while it runs: four samples
  # in five of this one were the generator alone before the sampler joined
  # them to the callers read again (docs/sampler.md, "Generators").
  expect_status 0 "$STEPSCOPE" record -o "$WORK/generator.db" --rate 997 -- "$python" "$programs/generator_chain.py" 2.5
  generator="Dataset.__getitem__.<locals>.<genexpr>"
  [ "${version#3.}" -ge 11 ] || generator="<genexpr>"  # no qualified names before 3.11
  joined=$("$PY" "$check" "$WORK/generator.db" leaf-callers "$generator" "<module>")
  torn=$(sqlite3 "$WORK/generator.db" "SELECT (SELECT value FROM metadata WHERE key = 'sampler_torn_stacks') || ', ' || (SELECT value FROM metadata WHERE key = 'sampler_torn_stacks_unjoined')")
  echo "   generator's samples: $joined; torn, unjoined: $torn"
  "$PY" - "$joined" "${version#3.}" <<'PYEOF' || fail "$version: the generator's samples lost their callers"
import json, sys
joined, minor = json.loads(sys.argv[1]), int(sys.argv[2])
samples, callers = joined["samples"], joined["callers"]
enclosing = callers.get("Dataset.__getitem__" if minor >= 11 else "__getitem__", 0)
ok = samples >= 20 and joined["whole"] >= 0.95 * samples and enclosing >= 0.9 * samples
sys.exit(0 if ok else 1)
PYEOF
  tested=$((tested + 1))
done
echo "$tested passed, 0 failed"
