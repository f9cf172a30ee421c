# record --metrics with the real Prometheus server (Debian's, installed by scripts/setup):
# Prometheus scrapes a recorded training loop every second, and its query API gives
# the program's own step, sample and token counts for the rank it ran as; the
# histogram's count matches; `promtool check metrics` passes on the textfile; a port
# already in use is a clear error before anything runs.
source "$(dirname "$0")/lib.sh"
for tool in prometheus promtool; do
  command -v "$tool" > /dev/null || skip_test "no $tool (run scripts/setup)"
done
require_venv_torch

free_port() { "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
metrics_port=$(free_port)
prometheus_port=$(free_port)
cat > "$WORK/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: training
    static_configs:
      - targets: ["127.0.0.1:$metrics_port"]
YAML
promtool check config "$WORK/prometheus.yml" > /dev/null || fail "promtool rejects the test's config"
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address="127.0.0.1:$prometheus_port" > "$WORK/prometheus.log" 2>&1 &
prometheus_pid=$!
trap 'kill $prometheus_pid 2>/dev/null; wait $prometheus_pid 2>/dev/null' EXIT

expect_status 0 env RANK=3 LOCAL_RANK=1 "$STEPSCOPE" record -o "$WORK/run.db" --metrics "127.0.0.1:$metrics_port" \
  --metrics-textfile "$WORK/steps.prom" -- "$venv_python" "$STEPSCOPE_REPO/tests/integration/programs/metrics_training.py"
grep -q "serving metrics on http://127.0.0.1:$metrics_port/metrics" "$WORK/stderr" || fail "no address printed: $(cat "$WORK/stderr")"
ran=$(tail -n 1 "$WORK/stdout")

# What Prometheus stored, through its HTTP API: the largest value each series reached.
query() {
  "$PY" - "$prometheus_port" "max_over_time($1[5m])" <<'PYEOF'
import json, sys, urllib.parse, urllib.request
url = "http://127.0.0.1:%s/api/v1/query?%s" % (sys.argv[1], urllib.parse.urlencode({"query": sys.argv[2]}))
result = json.load(urllib.request.urlopen(url, timeout=10))["data"]["result"]
print(result[0]["value"][1] if len(result) == 1 else "series: %d" % len(result))
PYEOF
}
"$PY" - "$ran" "$(query 'stepscope_steps_total{rank="3",local_rank="1",job="training"}')" \
  "$(query 'stepscope_step_duration_seconds_count{rank="3"}')" "$(query 'stepscope_samples_total{rank="3"}')" \
  "$(query 'stepscope_tokens_total{rank="3"}')" <<'PYEOF' || fail "Prometheus stored other numbers (log: $(tail -5 "$WORK/prometheus.log"))"
import json, sys
ran = json.loads(sys.argv[1])
got = dict(zip(("steps", "count", "samples", "tokens"), sys.argv[2:]))
print("the program:", ran, "Prometheus:", got)
assert got == {"steps": str(ran["steps"]), "count": str(ran["steps"]), "samples": str(ran["samples"]),
               "tokens": str(ran["tokens"])}, got
PYEOF

# The monitor's reading of the process's memory, while it ran: a training process's hundreds of MB.
rss=$(query 'stepscope_process_resident_memory_bytes{rank="3"}')
"$PY" -c 'import sys; assert float(sys.argv[1]) > 50e6, sys.argv[1]' "$rss" || fail "resident memory of rank 3: $rss"

promtool check metrics < "$WORK/steps.prom" || fail "promtool check metrics: the textfile"
grep -q '^stepscope_steps_total{host="[^"]*",rank="3",local_rank="1"} 300$' "$WORK/steps.prom" \
  || fail "the textfile's last state: $(grep steps_total "$WORK/steps.prom")"

# A port in use: a clear error, and the command never starts.
expect_status 2 "$STEPSCOPE" record -o "$WORK/busy.db" --metrics "127.0.0.1:$prometheus_port" -- \
  "$venv_python" -c 'open("'"$WORK"'/started", "w")'
grep -q "cannot listen on 127.0.0.1 port $prometheus_port" "$WORK/stderr" || fail "port in use: $(cat "$WORK/stderr")"
[ ! -e "$WORK/started" ] || fail "the command ran though the metrics port was taken"
expect_status 2 "$STEPSCOPE" record -o "$WORK/bad.db" --metrics "host:port" -- true
grep -q "not \[ADDR:\]PORT" "$WORK/stderr" || fail "a malformed address: $(cat "$WORK/stderr")"
echo "1 passed, 0 failed"
