# Shared helpers for integration tests: each test_*.sh sources this file.
# CTest sets STEPSCOPE (the binary) and STEPSCOPE_REPO; STEPSCOPE_SHARED may
# point at shared/ when it is not beside the repository.
set -euo pipefail

: "${STEPSCOPE:?run through ctest, which sets STEPSCOPE}"
: "${STEPSCOPE_REPO:?}"
: "${STEPSCOPE_SHARED:=$STEPSCOPE_REPO/../shared}"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/stepscope-it.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }

# skip_test WHY: the test cannot run here (a tool or the test data is missing);
# CTest lists it as skipped (SKIP_RETURN_CODE 77), not as passed.
skip_test() { echo "skipped: $*"; exit 77; }

# The real torch.profiler traces of ../shared/testdata/kineto. They stay
# there (shared/README.md), so a clone alone skips what reads them, saying so;
# .ci/run sets STEPSCOPE_REQUIRE_SHARED=1, which makes their absence a failure.
KINETO="$STEPSCOPE_SHARED/testdata/kineto"
have_kineto() {
  [ -d "$KINETO" ] && return 0
  [ -z "${STEPSCOPE_REQUIRE_SHARED:-}" ] || fail "the Kineto test traces are not at $KINETO"
  echo "part skipped: no Kineto test traces at $KINETO (put shared/ beside the checkout or set STEPSCOPE_SHARED)"
  return 1
}
# need_kineto: for a test that reads nothing else.
need_kineto() { have_kineto || exit 77; }

# expect_status N CMD...: runs CMD, fails unless it exits with N; its stderr
# is left in $WORK/stderr for the caller to check.
expect_status() {
  local want=$1; shift
  local got=0
  "$@" >"$WORK/stdout" 2>"$WORK/stderr" || got=$?
  [ "$got" -eq "$want" ] || fail "$* exited $got, expected $want; stderr: $(cat "$WORK/stderr")"
}

# wait_for_file PATH: a program under test says it is ready by creating PATH;
# a loaded machine can take seconds to start Python, so wait up to 60 s.
wait_for_file() {
  local tries=0
  until [ -e "$1" ]; do
    tries=$((tries + 1))
    [ "$tries" -lt 600 ] || fail "timed out waiting for $1"
    sleep 0.1
  done
}

expect_stderr_contains() {
  grep -qF -- "$1" "$WORK/stderr" || fail "stderr lacks '$1': $(cat "$WORK/stderr")"
}

# The project's venv Python, as $venv_python, with the hooks' package on
# STEPSCOPE_PYTHON_DIR for what it runs under record; a test that trains with
# PyTorch skips (saying so) where the venv has no torch.
require_venv_torch() {
  venv_python="$STEPSCOPE_REPO/.venv/bin/python"
  export STEPSCOPE_PYTHON_DIR="$STEPSCOPE_REPO/python"
  if ! "$venv_python" -c 'import torch' 2>/dev/null; then
    skip_test "no torch in $venv_python (run scripts/setup)"
  fi
}

# The Python that checks outputs: the project's venv when set up, else the system's.
PY=python3
[ -x "$STEPSCOPE_REPO/.venv/bin/python" ] && PY="$STEPSCOPE_REPO/.venv/bin/python"

# run_sql RUN.db SQL: the query's rows as sqlite3 prints them, with the run's
# samples (kept in compressed blocks) as a table `samples` (tools/run_samples.py).
run_sql() { "$PY" "$STEPSCOPE_REPO/tools/run_samples.py" "$1" "$2"; }

# The CPython interpreters to test against: pyenv's 3.8-3.13 and Debian's.
python_interpreters() {
  local minor dir
  for minor in 8 9 10 11 12 13; do
    for dir in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.$minor.*; do
      [ -x "$dir/bin/python3.$minor" ] && echo "$dir/bin/python3.$minor" && break
    done
  done
  [ -x /usr/bin/python3 ] && echo /usr/bin/python3
  return 0
}
