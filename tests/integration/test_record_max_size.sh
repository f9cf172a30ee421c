# record --max-size: a recording that outgrows its 1 MiB limit several times keeps its file near the limit
# all along, holds its newest data (the steps and samples from where it was trimmed to the end), and says what
# it dropped (the summary, the text and HTML reports' headers, report --json's `trimmed`); windows count from its oldest
# kept data; a bad size is a usage error before the command starts.
source "$(dirname "$0")/lib.sh"
export STEPSCOPE_PYTHON_DIR="$STEPSCOPE_REPO/python"
python=$(python_interpreters | tail -n 1)
paced="$STEPSCOPE_REPO/tests/integration/programs/paced_steps.py"
cd "$WORK"

# Bad sizes: exit 2, naming the option and the value; the command never starts.
for size in 12X 1.5G -5M "" 100K 1000000; do
  expect_status 2 "$STEPSCOPE" record -o bad.db --max-size "$size" -- "$python" -c 'open("started", "w")'
  expect_stderr_contains "record --max-size $size:"
  [ ! -e started ] && [ ! -e bad.db ] || fail "--max-size '$size': the command ran"
done
expect_status 2 "$STEPSCOPE" record -o bad.db --max-size 100K -- "$python" -c 'pass'
expect_stderr_contains "below the least limit, 1 MiB"

# About 18 s of 1 ms steps in six processes sampled at 1000 Hz: some 130 kB a second (one process writes
# about 22 kB a second, its spans, samples and counter values in compressed blocks), so the limit is reached
# after some 8 s, then again every second or two. The file's size is watched all along.
limit=$((1024 * 1024))
six_paced='import subprocess, sys
jobs = [subprocess.Popen([sys.executable] + sys.argv[1:]) for _ in range(6)]
sys.exit(max(job.wait() for job in jobs))'
"$STEPSCOPE" record -o run.db --rate 1000 --max-size 1M -- "$python" -c "$six_paced" "$paced" --steps 16000 --step-ms 1 \
  2> record.err &
recorder=$!
largest=0
while kill -0 "$recorder" 2>/dev/null; do
  size=$(stat -c %s run.db 2>/dev/null || echo 0)
  [ "$size" -gt "$largest" ] && largest=$size
  sleep 0.1
done
wait "$recorder" || fail "record exited $?: $(cat record.err)"
size=$(stat -c %s run.db)
[ "$size" -gt "$largest" ] && largest=$size
# The limit bounds the pages in use after each commit; the file holds them and the last commit's growth.
echo "run.db reached $largest bytes under --max-size 1M"
[ "$largest" -le $((limit + limit / 2)) ] || fail "run.db grew to $largest bytes under --max-size 1M"
grep -qF "the run file was trimmed to 1 MiB (--max-size): the recording's first" record.err \
  || fail "the summary does not say what was dropped: $(cat record.err)"

expect_status 0 "$STEPSCOPE" report run.db
grep -qE "^  trimmed to 1 MiB \(--max-size\): the recording's first [0-9.]+ s dropped \([0-9]+ samples" \
  "$WORK/stdout" || fail "the text report's header: $(head -8 "$WORK/stdout")"
expect_status 0 "$STEPSCOPE" report --json run.db
cp "$WORK/stdout" report.json
kept=$(run_sql run.db \
  "SELECT COUNT(*) FROM samples WHERE ts_ns >= (SELECT value FROM metadata WHERE key = 'trimmed_before_ns')")
"$PY" - report.json "$kept" <<'PYEOF' || fail "the trimmed run's report: $(head -c 1500 report.json)"
import json, sys
report = json.load(open(sys.argv[1]))
trimmed, metadata, steps = report["trimmed"], report["metadata"], report["steps"]
assert trimmed["max_size_bytes"] == 1 << 20 and metadata["max_size_bytes"] == str(1 << 20), trimmed
before = trimmed["before_ns"]
assert metadata["trimmed_before_ns"] == str(before)
# Several limits' worth dropped: more than the file keeps.
assert trimmed["dropped_seconds"] > 5, trimmed
assert trimmed["samples"] > 0 and trimmed["spans"] > 0 and trimmed["counter_values"] > 0, trimmed
# The samples kept are every sample the file holds from the cut on.
samples = sum(p["samples"] for p in report["processes"])
assert samples == int(sys.argv[2]) and samples > 1000, (samples, sys.argv[2])
# The steps kept are the newest: from the cut to their process's end, none before.
per_step = steps["per_step"]
# Some 1 ms steps per dropped second (paced, so at most 1000): how many depends on how much a MiB holds.
assert 1000 < steps["count"] < 16000 - 1000, (steps["count"], trimmed["dropped_seconds"])
assert per_step[0]["start_ns"] >= before, (per_step[0], before)
end = next(p["end_ns"] for p in report["processes"] if p["pid"] == steps["pid"])
last = per_step[-1]["start_ns"] + per_step[-1]["time_ns"]
assert 0 <= end - last < 1e9, (end, last)
PYEOF

# The HTML report says it too, in its header.
[ -d "$STEPSCOPE_REPO/node_modules/playwright-core" ] || fail "node_modules missing: run scripts/setup"
[ -x /usr/bin/chromium ] || fail "/usr/bin/chromium missing: run scripts/setup"
expect_status 0 "$STEPSCOPE" report run.db --html run.html
node "$STEPSCOPE_REPO/tests/integration/report_html_check.mjs" run.html --sections steps,flame \
  --text "trimmed to 1 MiB (--max-size): the recording's first" > html.json || fail "the HTML page: $(cat html.json)"

# Windows count from the oldest data kept; one before it says the run was trimmed.
expect_status 0 "$STEPSCOPE" report --json run.db --window 0:1
expect_status 0 "$STEPSCOPE" report --json run.db --window -2:
expect_status 2 "$STEPSCOPE" report run.db --window -1000:-999
expect_stderr_contains "outside the run"
expect_stderr_contains "the run was trimmed (record --max-size): it starts"
echo "1 passed, 0 failed"
