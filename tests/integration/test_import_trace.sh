# import and report on traces: real ones (torch 2.x Kineto from the venv,
# Debian's torch 1.13 legacy format, both exported here), bad ones, --strict.
source "$(dirname "$0")/lib.sh"

# Counts of what a trace holds, by Python's json (independent of stepscope):
# complete events, and metadata-less events of other phases.
count_complete() {
  "$PY" - "$1" <<'PYEOF'
import gzip, json, sys
path = sys.argv[1]
opener = gzip.open if path.endswith(".gz") else open
with opener(path, "rt") as f:
    trace = json.load(f)
events = trace["traceEvents"] if isinstance(trace, dict) else trace
print(sum(1 for e in events if e.get("ph") == "X"))
PYEOF
}

spans_in_run() {
  run_sql "$1" "select count(*) from spans"
}

export_trace() {  # export_trace PYTHON OUT: profile a few ops with PYTHON's torch
  "$1" - "$2" <<'PYEOF'
import sys, torch
x = torch.randn(64, 64)
with torch.autograd.profiler.profile(record_shapes=True) as prof:
    for _ in range(3):
        y = torch.mm(x, x).relu().sum()
prof.export_chrome_trace(sys.argv[1])
PYEOF
}

check_import() {  # check_import TRACE: import matches Python's count of "X" events
  local trace=$1 expected got
  expect_status 0 "$STEPSCOPE" import "$trace" -o "$WORK/run.db"
  expected=$(count_complete "$trace")
  got=$(spans_in_run "$WORK/run.db")
  [ "$expected" -gt 0 ] || fail "$trace has no complete events"
  [ "$got" -eq "$expected" ] || fail "$trace: $got spans imported, Python counts $expected complete events"
  expect_status 0 "$STEPSCOPE" report "$trace" --json --strict
  rm -f "$WORK/run.db"
}

# A real Kineto trace (gzip) from the shared test data.
have_kineto && check_import "$KINETO/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"

# Traces exported here by torch 2.x (Kineto) and Debian's torch 1.13 (legacy).
if "$PY" -c "import torch" 2>/dev/null; then
  export_trace "$PY" "$WORK/kineto.json"
  check_import "$WORK/kineto.json"
fi
if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import torch" 2>/dev/null; then
  export_trace /usr/bin/python3 "$WORK/legacy.json"
  grep -q '"CPU functions"' "$WORK/legacy.json" || fail "torch 1.13 trace is not in the legacy format"
  check_import "$WORK/legacy.json"
fi

# Bad input: exit status 2 and a message that says where.
printf '{"traceEvents": [{"ph": "X", "ts": 1, "dur": 2, "pid": 1, "tid": 1, "name": "a"}, {"ph": ' > "$WORK/truncated.json"
expect_status 2 "$STEPSCOPE" import "$WORK/truncated.json" -o "$WORK/t.db"
expect_stderr_contains "truncated.json: invalid JSON at byte 89 (end of input; truncated?) (in event #1)"
printf '[{"ph": "X", "ts": "1", "dur": 2, "pid": 1, "tid": 1, "name": "a"}]' > "$WORK/wrong_type.json"
expect_status 2 "$STEPSCOPE" report "$WORK/wrong_type.json"
expect_stderr_contains 'wrong_type.json: event #0: "ts" is not a number'
[ ! -e "$WORK/t.db" ] || fail "a failed import left a run file"

# Tolerated problems: warnings on import; errors with --strict. A hostile
# category name reaches the terminal escaped.
printf '[{"ph": "X", "ts": 1, "dur": -2, "pid": 1, "tid": 1, "name": "a", "cat": "evil\\u001b[31m"}]' > "$WORK/warn.json"
expect_status 0 "$STEPSCOPE" import "$WORK/warn.json" -o "$WORK/w.db"
expect_stderr_contains 'stepscope: warning: 1 negative "dur" values made zero'
expect_stderr_contains 'unknown category "evil\x1B[31m"'
expect_status 2 "$STEPSCOPE" import "$WORK/warn.json" -o "$WORK/w2.db" --strict
expect_stderr_contains "strict import refused the trace"
expect_status 2 "$STEPSCOPE" report "$WORK/warn.json" --strict
expect_status 0 "$STEPSCOPE" report "$WORK/warn.json"
# A flow that ends on no slice: report, which reads no flows, takes the
# trace; --strict refuses it as import --strict does.
printf '[{"ph": "X", "ts": 1, "dur": 2, "pid": 1, "tid": 1, "name": "a"},
 {"ph": "s", "id": 3, "ts": 1, "pid": 1, "tid": 1, "cat": "ac2g"},
 {"ph": "f", "id": 3, "ts": 9, "pid": 1, "tid": 2, "cat": "ac2g", "bp": "e"}]' > "$WORK/flow.json"
expect_status 0 "$STEPSCOPE" report "$WORK/flow.json" --json
expect_status 2 "$STEPSCOPE" report "$WORK/flow.json" --strict
expect_stderr_contains "1 flow events not on any slice of their thread ignored"
expect_status 2 "$STEPSCOPE" import "$WORK/flow.json" -o "$WORK/flow.db" --strict
echo "import tests passed"
