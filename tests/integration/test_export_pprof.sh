# export --format pprof: Go's own pprof (go tool pprof, the reader Pyroscope and Parca
# share the format with) reads the file, and what it counts matches the collapsed
# export of the same run: the total, and every function's self samples. The samples
# of steps carry their phase; a trace's spans export too; hostile names stay escaped.
source "$(dirname "$0")/lib.sh"
if ! command -v go > /dev/null; then
  skip_test "no go on PATH (go tool pprof reads the export)"
fi
export HOME="$WORK"  # pprof keeps its state under $HOME/pprof
pprof() { go tool pprof "$@" 2> "$WORK/pprof.err"; }

# The flat (self) count of each function name: from `pprof -top` on standard input,
# or from collapsed stacks (the leaf's label is `function (file:line)`).
flat_by_name() {
  "$PY" - "$1" <<'PYEOF'
import collections, json, re, sys
kind = sys.argv[1]
flat = collections.Counter()
total = 0
for line in sys.stdin:
    if kind == "top":
        m = re.match(r"\s*(\d+)\s+[\d.]+%\s+[\d.]+%\s+\d+\s+[\d.]+%\s+(.*)$", line)
        if m:
            flat[m.group(2)] += int(m.group(1))
        m = re.search(r"Total samples = (\d+)", line)
        if m:
            total = int(m.group(1))
    else:
        stack, count = line.rstrip("\n").rsplit(" ", 1)
        total += int(count)
        frames = stack.split(";")[2:]  # after the process and thread
        if frames:
            flat[re.sub(r" \([^()]*\)$", "", frames[-1])] += int(count)
print(json.dumps({"total": total, "flat": {k: v for k, v in flat.items() if v}}, sort_keys=True))
PYEOF
}

venv_python="$STEPSCOPE_REPO/.venv/bin/python"
if "$venv_python" -c 'import torch' 2>/dev/null; then
  export STEPSCOPE_PYTHON_DIR="$STEPSCOPE_REPO/python"
  expect_status 0 "$STEPSCOPE" record --rate 200 -o "$WORK/run.db" -- "$venv_python" \
    "$STEPSCOPE_REPO/tests/integration/programs/slow_dataset.py" --steps 40
  # With idle samples: the Dataset sleeps, and those samples are the data waits' own.
  expect_status 0 "$STEPSCOPE" export "$WORK/run.db" --idle --format pprof -o "$WORK/run.pb.gz"
  expect_status 0 "$STEPSCOPE" export "$WORK/run.db" --idle --format collapsed -o "$WORK/run.collapsed"
  pprof -top -nodecount=100000 -sample_index=samples "$WORK/run.pb.gz" > "$WORK/top.txt" \
    || fail "go tool pprof cannot read the export: $(cat "$WORK/pprof.err")"
  flat_by_name top < "$WORK/top.txt" > "$WORK/from_pprof.json"
  flat_by_name collapsed < "$WORK/run.collapsed" > "$WORK/from_collapsed.json"
  cmp -s "$WORK/from_pprof.json" "$WORK/from_collapsed.json" \
    || fail "pprof and collapsed count differently: $(head -c 600 "$WORK/from_pprof.json") against $(head -c 600 "$WORK/from_collapsed.json")"
  # The Dataset's sleep is data wait: labelled so on the step thread's samples.
  pprof -top -sample_index=samples -tagfocus=phase=data_wait "$WORK/run.pb.gz" > "$WORK/wait.txt" \
    || fail "pprof -tagfocus: $(cat "$WORK/pprof.err")"
  grep -q "__getitem__" "$WORK/wait.txt" || fail "no data_wait samples in the Dataset: $(head -20 "$WORK/wait.txt")"
  pprof -tags "$WORK/run.pb.gz" > "$WORK/tags.txt"
  for tag in "phase:" "data_wait" "pid:" "tid:" "process:" "thread:"; do
    grep -q "$tag" "$WORK/tags.txt" || fail "pprof -tags lacks $tag: $(cat "$WORK/tags.txt")"
  done
fi

# A trace's spans: a profile of self times (no sampling period), read by pprof too.
if have_kineto; then
  trace=$(ls "$KINETO"/ns_resolution_trace/*.json.gz | head -n 1)
  expect_status 0 "$STEPSCOPE" export "$trace" --format pprof -o "$WORK/trace.pb.gz"
  pprof -top -sample_index=wall "$WORK/trace.pb.gz" > "$WORK/trace.txt" \
    || fail "go tool pprof cannot read a trace's export: $(cat "$WORK/pprof.err")"
  grep -q "Type: wall" "$WORK/trace.txt" || fail "no wall sample type: $(head "$WORK/trace.txt")"
fi

# Names from a trace: control characters escaped, the rest as it was.
printf '%s' '{"traceEvents": [
 {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "w;1 \u0001"}},
 {"ph": "X", "cat": "cpu_op", "name": "a;b c\nd", "ts": 10, "dur": 100, "pid": 1, "tid": 2}]}' > "$WORK/hostile.json"
expect_status 0 "$STEPSCOPE" export "$WORK/hostile.json" --format pprof -o "$WORK/hostile.pb.gz"
pprof -raw "$WORK/hostile.pb.gz" > "$WORK/hostile.txt" || fail "pprof -raw: $(cat "$WORK/pprof.err")"
grep -qF 'a;b c\x0Ad' "$WORK/hostile.txt" || fail "the span's name: $(cat "$WORK/hostile.txt")"
grep -qF 'w;1 \x01' "$WORK/hostile.txt" || fail "the thread's name: $(cat "$WORK/hostile.txt")"
echo "1 passed, 0 failed"
