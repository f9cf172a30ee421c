# export --format perfetto: a real torch.profiler trace and a hostile one,
# checked as JSON independently of stepscope and read back by stepscope's
# own importer.
source "$(dirname "$0")/lib.sh"

need_kineto
kineto=$KINETO
# A CUDA trace with flows, and a ROCm one whose operators carry input shapes.
for trace in $(ls "$kineto"/critical_path/alexnet/*.json.gz | head -n 1) "$kineto/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"; do
expect_status 0 "$STEPSCOPE" export "$trace" --format perfetto -o "$WORK/trace.perfetto.json"

# Independent of stepscope: the export's slices, per category, are the
# original's complete events (Kineto writes no B/E pairs), with the same
# names and times; process and thread names carry over.
"$PY" - "$trace" "$WORK/trace.perfetto.json" <<'PY'
import collections, gzip, json, sys
original = json.load(gzip.open(sys.argv[1]))["traceEvents"]
exported = json.load(open(sys.argv[2]))["traceEvents"]
def slices(events):
    return sorted((str(e["name"]), round(float(e["ts"]) * 1000), round(float(e.get("dur", 0)) * 1000))
                  for e in events if e.get("ph") == "X")
assert slices(exported) == slices(original), "slices differ"
def names(events, kind):
    return {(e["pid"], e.get("tid")) if kind == "thread_name" else e["pid"]: e["args"]["name"]
            for e in events if e.get("ph") == "M" and e.get("name") == kind}
for kind in ("process_name", "thread_name"):
    want, got = names(original, kind), names(exported, kind)
    assert all(got.get(k) == v for k, v in want.items() if isinstance(k, int) or all(isinstance(x, int) for x in k)), kind
# Kineto's string ids ("Spans", "Traces") go back as strings.
def string_ids(events):
    return {(e["pid"], e["tid"]) for e in events if e.get("ph") == "X" and isinstance(e["pid"], str)}
assert string_ids(exported) == string_ids(original), (string_ids(exported), string_ids(original))
flows = collections.Counter(e["ph"] for e in exported if e["ph"] in "sf")
assert flows["s"] == flows["f"], flows
print(len(slices(exported)), "slices,", flows["s"], "flows")
PY

# Read back by stepscope: the same spans by kind (times, correlations, sizes,
# input shapes) and the same flows as the original.
expect_status 0 "$STEPSCOPE" import "$trace" -o "$WORK/original.db"
expect_status 0 "$STEPSCOPE" import "$WORK/trace.perfetto.json" -o "$WORK/back.db"
# run_sql (the run format's reference decoder) takes one statement at a time.
spans_and_flows() {
  run_sql "$1" "SELECT kind, count(*), sum(end_ns - start_ns), sum(correlation), sum(bytes), group_concat(DISTINCT d.value)
                FROM spans s JOIN strings d ON d.id = s.detail GROUP BY kind" &&
    run_sql "$1" "SELECT count(*) FROM flows"
}
original=$(spans_and_flows "$WORK/original.db")
back=$(spans_and_flows "$WORK/back.db")
[ "$original" = "$back" ] || fail "$trace: spans or flows differ after the round trip: $back"
done

# Hostile names stay valid JSON and come back as the same (escaped) text.
printf '%s' '{"traceEvents": [
 {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "py \"x\" </script><script>alert(1)</script>"}},
 {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "w;1 ]]> \u0001 \u2028"}},
 {"ph": "X", "cat": "cpu_op", "name": "<img src=x onerror=alert(1)>", "ts": 20, "dur": 30, "pid": 1, "tid": 2},
 {"ph": "C", "name": "mem \"q\"", "pid": 1, "ts": 25, "args": {"used": 7}}]}' > "$WORK/hostile.json"
expect_status 0 "$STEPSCOPE" export "$WORK/hostile.json" --format perfetto -o "$WORK/hostile.perfetto.json"
"$PY" - "$WORK/hostile.perfetto.json" <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
names = {e["name"] if e["ph"] != "M" else e["args"]["name"] for e in events}
assert "<img src=x onerror=alert(1)>" in names, names
assert 'py "x" </script><script>alert(1)</script>' in names, names
assert "w;1 ]]> \\x01 \u2028" in names, names
assert any(e["ph"] == "C" and e["name"] == 'mem "q"' and e["args"] == {"used": 7} for e in events), events
PY
expect_status 0 "$STEPSCOPE" import "$WORK/hostile.perfetto.json" -o "$WORK/hostile.db"
[ "$(run_sql "$WORK/hostile.db" "SELECT n.value FROM spans s JOIN strings n ON n.id = s.name")" = '<img src=x onerror=alert(1)>' ] \
  || fail "the hostile span name did not come back"
echo "1 passed, 0 failed"
