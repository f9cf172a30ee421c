# stepscope mlflow and record --mlflow with the real MLflow tracking server (pinned in
# requirements.txt), with a SQLite store, its artifact proxy and its basic-auth app on
# loopback: everything logged is read back through MLflow's REST API and compared with
# `report --json` and the run file; a refused password, a missing experiment, a server
# that is not there and a URI that is not HTTP are clear errors (exit 2) that leave the
# run file as it was, and record checks the server before the command starts.
source "$(dirname "$0")/lib.sh"
venv="$STEPSCOPE_REPO/.venv/bin"
export STEPSCOPE_PYTHON_DIR="$STEPSCOPE_REPO/python"
if ! [ -x "$venv/mlflow" ] || ! "$venv/python" -c 'import torch, flask_wtf' 2>/dev/null; then
  skip_test "no mlflow, Flask-WTF or torch in $venv (run scripts/setup)"
fi

port=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
uri="http://127.0.0.1:$port"
export MLFLOW_TRACKING_USERNAME=admin MLFLOW_TRACKING_PASSWORD=stepscope-test-pass
unset MLFLOW_TRACKING_URI MLFLOW_EXPERIMENT_NAME MLFLOW_TRACKING_TOKEN
(cd "$WORK" && MLFLOW_AUTH_ADMIN_PASSWORD=$MLFLOW_TRACKING_PASSWORD MLFLOW_FLASK_SERVER_SECRET_KEY=stepscope-test \
  exec "$venv/mlflow" server --app-name basic-auth --backend-store-uri "sqlite:///$WORK/mlflow.db" \
  --artifacts-destination "$WORK/artifacts" --host 127.0.0.1 --port "$port" --workers 1) > "$WORK/mlflow.log" 2>&1 &
server_pid=$!
trap 'kill $server_pid 2>/dev/null; wait $server_pid 2>/dev/null; rm -rf "$WORK"' EXIT

# MLflow's REST API, as the test reads it back: api METHOD PATH [JSON BODY] prints the answer.
api() {
  "$PY" - "$uri" "$@" <<'PYEOF'
import base64, os, sys, urllib.request
uri, method, path = sys.argv[1:4]
body = sys.argv[4].encode() if len(sys.argv) > 4 else None
request = urllib.request.Request(uri + path, data=body, method=method, headers={"Content-Type": "application/json"})
credentials = "%s:%s" % (os.environ["MLFLOW_TRACKING_USERNAME"], os.environ["MLFLOW_TRACKING_PASSWORD"])
request.add_header("Authorization", "Basic " + base64.b64encode(credentials.encode()).decode())
sys.stdout.buffer.write(urllib.request.urlopen(request, timeout=30).read())
PYEOF
}
for _ in $(seq 1 240); do
  api GET /health > /dev/null 2>&1 && break
  kill -0 $server_pid 2>/dev/null || fail "mlflow server exited: $(tail -5 "$WORK/mlflow.log")"
  sleep 0.5
done
api GET /health > /dev/null || fail "mlflow server not up after 120 s: $(tail -5 "$WORK/mlflow.log")"
api POST /api/2.0/mlflow/experiments/create '{"name": "stepscope tests"}' > "$WORK/experiment.json"

# record --mlflow: 130 steps make about 1300 metric points, two log-batch requests.
expect_status 0 "$STEPSCOPE" record -o "$WORK/run.db" --mlflow --tracking-uri "$uri/" --experiment "stepscope tests" \
  --run-name "tiny lm" -- "$venv/python" "$STEPSCOPE_REPO/tests/integration/programs/metrics_training.py" --steps 130 --linger 0
expect_stderr_contains "logged $WORK/run.db to MLflow run"
run_id=$(sed -n 's/.*to MLflow run \([0-9a-f]*\) .*/\1/p' "$WORK/stderr")
"$STEPSCOPE" report --json "$WORK/run.db" > "$WORK/report.json"

# Everything the run holds, through the REST API.
# read_back RUN_ID OUT_DIR FILE: into OUT_DIR, run.json, history.json (metric key -> points),
# artifacts.json, and the artifacts (FILE: the run file's or trace's name).
read_back() {
  local id=$1 out=$2
  mkdir -p "$out"
  api GET "/api/2.0/mlflow/runs/get?run_id=$id" > "$out/run.json"
  api GET "/api/2.0/mlflow/artifacts/list?run_id=$id" > "$out/artifacts.json"
  "$PY" -c 'import json, sys; print("\n".join(m["key"] for m in json.load(open(sys.argv[1]))["run"]["data"].get("metrics", [])))' \
    "$out/run.json" > "$out/keys"
  echo "{" > "$out/history.json"
  local key sep=""
  while read -r key; do
    printf '%s"%s": ' "$sep" "$key" >> "$out/history.json"
    api GET "/api/2.0/mlflow/metrics/get-history?run_id=$id&metric_key=$(printf %s "$key" | sed 's|/|%2F|g')&max_results=25000" >> "$out/history.json"
    sep=","
  done < "$out/keys"
  echo "}" >> "$out/history.json"
  local experiment
  experiment=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["run"]["info"]["experiment_id"])' "$out/run.json")
  for name in report.json report.html flamegraph.svg "$3"; do
    api GET "/api/2.0/mlflow-artifacts/artifacts/$experiment/$id/artifacts/$name" > "$out/$name"
  done
}
read_back "$run_id" "$WORK/back" run.db
api POST /api/2.0/mlflow/runs/search "{\"experiment_ids\": [\"$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["experiment_id"])' "$WORK/experiment.json")\"]}" > "$WORK/search.json"

"$PY" - "$WORK" "$run_id" <<'PYEOF' || fail "MLflow holds other figures than the report"
import json, sys
work, run_id = sys.argv[1:]
back = work + "/back/"
report = json.load(open(work + "/report.json"))
run = json.load(open(back + "run.json"))["run"]
history = {key: answer["metrics"] for key, answer in json.load(open(back + "history.json")).items()}
found = json.load(open(work + "/search.json"))["runs"]
assert [r["info"]["run_id"] for r in found] == [run_id], found
info, data = run["info"], run["data"]
assert info["status"] == "FINISHED" and info["run_name"] == "tiny lm", info
assert info["start_time"] <= info["end_time"], info
params = {p["key"]: p["value"] for p in data["params"]}
tags = {t["key"]: t["value"] for t in data["tags"]}
assert params["command"].endswith("metrics_training.py --steps 130 --linger 0"), params
assert params["python"].count(".") == 2 and params["torch"].startswith("2."), params
assert params["dataloader"] == ("batch_size=8,num_workers=0,pin_memory=False,prefetch_factor=None,"
                                "persistent_workers=False"), params
assert params["rate_hz"] == "100" and params["steps_origin"] == "hooks", params
steps = report["steps"]
# One point per step, steps numbered from 1, at the step's end (Unix ms, in the run's time).
points = history["step_time_ms"]
assert [p["step"] for p in sorted(points, key=lambda p: p["step"])] == list(range(1, steps["count"] + 1)), points[:3]
assert steps["count"] == 130, steps["count"]
assert all(info["start_time"] <= p["timestamp"] <= info["end_time"] for p in points), (info, points[:2])
assert sum(len(points) for points in history.values()) > 1000, "one log-batch would have done"
for key in ("data_wait_ms", "forward_share", "backward_share", "optimizer_share", "samples_per_sec",
            "tokens_per_sec"):
    assert len(history[key]) == 130, (key, len(history[key]))
close = lambda a, b: abs(a - b) <= 1e-9 * max(1.0, abs(b))
# Memory peaks are read once per 100 ms or more: a point for each step that has one.
peaks = {p["step"]: p["value"] for p in history["peak_host_memory_bytes"]}
want = {n: s["peak_host_bytes"] for n, s in enumerate(steps["per_step"], 1) if s["peak_host_bytes"] is not None}
assert peaks and peaks == want, (peaks, want)
times = {p["step"]: p["value"] for p in points}
waits = {p["step"]: p["value"] for p in history["data_wait_ms"]}
samples = {p["step"]: p["value"] for p in history["samples_per_sec"]}
for number, step in enumerate(steps["per_step"], 1):
    assert close(times[number], step["time_ns"] / 1e6), (number, times[number], step)
    assert close(waits[number], step["data_wait_ns"] / 1e6), (number, waits[number], step)
    assert close(samples[number], step["samples"] / (step["time_ns"] / 1e9)), (number, samples[number], step)
summary = {m["key"][len("summary/"):]: m["value"] for m in data["metrics"] if m["key"].startswith("summary/")}
assert summary["steps"] == 130 and summary["warmup_steps"] == steps["warmup_steps"], summary
for key in ("p50", "p90", "p99", "mean"):
    assert close(summary["step_time_%s_ms" % key], steps["step_time_ms"][key]), (key, summary, steps["step_time_ms"])
assert close(summary["samples_per_sec"], steps["samples_per_sec"]), summary
assert close(summary["tokens_per_sec"], steps["tokens_per_sec"]), summary
for phase, fraction in steps["phases"].items():
    assert close(summary[phase + "_share"], fraction), (phase, summary, steps["phases"])
findings = report["diagnosis"]
assert summary["findings"] == len(findings), summary
if findings:
    assert tags["stepscope.top_finding"] == findings[0]["id"], tags
    assert tags["stepscope.verdict"] == findings[0]["title"], tags
    assert tags["stepscope.findings"] == ",".join(f["id"] for f in findings), tags
else:
    assert tags["stepscope.verdict"] == report["diagnosis_note"], tags
assert tags["mlflow.source.name"] == params["command"], tags
files = {f["path"]: f["file_size"] for f in json.load(open(back + "artifacts.json"))["files"]}
assert set(files) == {"report.json", "report.html", "flamegraph.svg", "run.db"}, files
assert open(back + "report.json").read() == open(work + "/report.json").read(), "report.json differs"
assert open(back + "run.db", "rb").read() == open(work + "/run.db", "rb").read(), "run.db differs"
assert "<svg" in open(back + "flamegraph.svg").read(1000) and "<html" in open(back + "report.html").read(1000).lower()
print("record --mlflow:", len(history), "metrics,", sum(len(p) for p in history.values()), "points;", files)
PYEOF

# stepscope mlflow on a torch.profiler trace, server and experiment from MLflow's variables:
# the steps of its ProfilerStep ranges, at the trace's own (epoch) times.
if have_kineto; then
trace="$KINETO/trace_diff/control/control.json.gz"
expect_status 0 env MLFLOW_TRACKING_URI="$uri" MLFLOW_EXPERIMENT_NAME="stepscope tests" "$STEPSCOPE" mlflow "$trace"
trace_run=$(sed -n 's/.*to MLflow run \([0-9a-f]*\) .*/\1/p' "$WORK/stderr")
"$STEPSCOPE" report --json "$trace" > "$WORK/trace_report.json"
read_back "$trace_run" "$WORK/trace_back" control.json.gz
"$PY" - "$WORK" "$trace" <<'PYEOF' || fail "the trace's MLflow run"
import gzip, json, sys
work, trace = sys.argv[1:]
report = json.load(open(work + "/trace_report.json"))
run = json.load(open(work + "/trace_back/run.json"))["run"]
history = {key: answer["metrics"] for key, answer in json.load(open(work + "/trace_back/history.json")).items()}
points = sorted(history["step_time_ms"], key=lambda p: p["step"])
steps = report["steps"]["per_step"]
assert run["info"]["run_name"] and run["info"]["status"] == "FINISHED", run["info"]
assert len(points) == len(steps) > 0, (len(points), len(steps))
# Older Kineto traces count epoch microseconds: each step ends at its own Unix time.
for point, step in zip(points, steps):
    assert point["timestamp"] == (step["start_ns"] + step["time_ns"]) // 1_000_000, (point, step)
assert open(work + "/trace_back/control.json.gz", "rb").read() == open(trace, "rb").read()
assert {p["key"]: p["value"] for p in run["data"]["params"]}["steps_origin"] == "profiler_steps"
print("mlflow TRACE:", len(points), "steps")
PYEOF
fi

# Failures: exit 2 and a message naming the server; nothing logged, the run file as it was.
before=$(sha256sum < "$WORK/run.db")
expect_status 2 env MLFLOW_TRACKING_PASSWORD=wrong "$STEPSCOPE" mlflow "$WORK/run.db" --tracking-uri "$uri"
expect_stderr_contains "the tracking server $uri refused to find the Default experiment (HTTP 401"
expect_status 2 "$STEPSCOPE" mlflow "$WORK/run.db" --tracking-uri "$uri" --experiment "no such experiment"
expect_stderr_contains "the tracking server $uri has no experiment 'no such experiment'"
closed=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
expect_status 2 "$STEPSCOPE" mlflow "$WORK/run.db" --tracking-uri "http://127.0.0.1:$closed"
expect_stderr_contains "cannot reach the tracking server http://127.0.0.1:$closed"
expect_status 2 "$STEPSCOPE" mlflow "$WORK/run.db" --tracking-uri "file://$WORK/mlruns"
expect_stderr_contains "tracking URI 'file://$WORK/mlruns' is not an http:// or https:// address"
expect_status 2 "$STEPSCOPE" mlflow "$WORK/run.db"
expect_stderr_contains "no tracking server: give --tracking-uri or set MLFLOW_TRACKING_URI"
[ "$(sha256sum < "$WORK/run.db")" = "$before" ] || fail "a failed upload changed the run file"
# record checks the server before the command starts.
expect_status 2 "$STEPSCOPE" record -o "$WORK/never.db" --mlflow --tracking-uri "$uri" --experiment "no such experiment" \
  -- "$venv/python" -c 'open("'"$WORK"'/started", "w")'
expect_stderr_contains "has no experiment 'no such experiment'"
[ ! -e "$WORK/started" ] && [ ! -e "$WORK/never.db" ] || fail "record ran the command though the experiment is missing"
expect_status 2 "$STEPSCOPE" record -o "$WORK/never.db" --tracking-uri "$uri" -- true
expect_stderr_contains "--tracking-uri requires --mlflow"
# The runs logged above: record's and, with the Kineto traces here, the trace's.
logged=1
[ -n "${trace_run:-}" ] && logged=2
runs=$(api POST /api/2.0/mlflow/runs/search '{"experiment_ids": ["0", "1"]}' | "$PY" -c 'import json, sys; print(len(json.load(sys.stdin)["runs"]))')
[ "$runs" = "$logged" ] || fail "the failures left runs behind: $runs runs in the experiments"
echo "1 passed, 0 failed"
