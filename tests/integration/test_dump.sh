# stepscope dump on every installed CPython: the blocked program's stacks,
# thread names, idle/running and the GIL holder agree with what the
# interpreter itself reports; its forked child is in the tree; a non-Python
# process and a missing pid are reported clearly.
source "$(dirname "$0")/lib.sh"
HERE="$(dirname "$0")/dump"

PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  for expected in "$WORK"/expected.*.json; do
    [ -e "$expected" ] && kill -9 "$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["child_pid"])' "$expected")" 2>/dev/null || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT

# Stops the program $1 and its forked child, whose pid it wrote to $2.
stop_program() {
  local child
  child=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["child_pid"])' "$2")
  kill -9 "$1" "$child" 2>/dev/null || true
  wait "$1" 2>/dev/null || true
}

pythons=()
PYENV_ROOT=${PYENV_ROOT:-$HOME/.pyenv}
for minor in 8 9 10 11 12 13; do
  found=$(ls -d "$PYENV_ROOT"/versions/3."$minor".* 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$found" ]; then pythons+=("$found/bin/python3"); else echo "skipped: no CPython 3.$minor in pyenv"; fi
done
[ -x /usr/bin/python3 ] && pythons+=(/usr/bin/python3)
[ "${#pythons[@]}" -gt 0 ] || skip_test "no Python interpreter found"

passed=0
for python in "${pythons[@]}"; do
  expected="$WORK/expected.$passed.json"
  "$python" "$HERE/blocked_program.py" "$expected" &
  pid=$!
  PIDS+=("$pid")
  for _ in $(seq 200); do [ -e "$expected" ] && break; sleep 0.05; done
  [ -e "$expected" ] || fail "$python: the test program did not start"

  expect_status 0 "$STEPSCOPE" dump --pid "$pid" --json
  cp "$WORK/stdout" "$WORK/dump.json"
  "$PY" "$HERE/check_dump.py" "$WORK/dump.json" "$expected" "$pid" ||
    fail "$python: dump --json disagrees with the interpreter: $(cat "$WORK/dump.json")"

  expect_status 0 "$STEPSCOPE" dump --pid "$pid"
  grep -q "^Process $pid: " "$WORK/stdout" || fail "$python: text dump lacks the process line"
  grep -qE "^Thread $pid \(.*\) \[idle\]$" "$WORK/stdout" || fail "$python: text dump lacks the idle main thread: $(cat "$WORK/stdout")"
  grep -qE "^Thread [0-9]+ \(spinner\) \[running\] \[holds GIL\]$" "$WORK/stdout" ||
    fail "$python: text dump lacks the running spinner holding the GIL: $(cat "$WORK/stdout")"
  grep -qE "^    inner \(.*blocked_program.py:[0-9]+\)$" "$WORK/stdout" || fail "$python: text dump lacks inner()"
  stop_program "$pid" "$expected"
  echo "ok: $python"
  passed=$((passed + 1))
done

# A process that is not Python: listed as such, not an error.
sleep 30 &
sleeper=$!
PIDS+=("$sleeper")
expect_status 0 "$STEPSCOPE" dump --pid "$sleeper"
grep -q "not a Python process" "$WORK/stdout" || fail "dump of sleep: $(cat "$WORK/stdout")"
expect_status 0 "$STEPSCOPE" dump --pid "$sleeper" --json
"$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["processes"][0]["python"] is None' "$WORK/stdout" ||
  fail "dump --json of sleep: $(cat "$WORK/stdout")"

# A pid that does not exist: bad input, status 2.
missing=$(( $(cat /proc/sys/kernel/pid_max) - 1 ))
while [ -e /proc/$missing ]; do missing=$((missing - 1)); done
expect_status 2 "$STEPSCOPE" dump --pid "$missing"
expect_stderr_contains "no process with pid $missing"
# Another user's process: refused, with the reason and the fix.
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
  expect_status 2 setpriv --reuid=65534 --regid=65534 --clear-groups "$STEPSCOPE" dump --pid "$sleeper"
  expect_stderr_contains "belongs to uid 0"
  expect_stderr_contains "run stepscope as the same user, or as root"
else
  echo "skipped: the permission check needs root and setpriv"
fi
kill "$sleeper"; wait "$sleeper" 2>/dev/null || true

echo "$((passed + 1)) passed, 0 failed"
