# report --html: the page opened in Debian's Chromium (headless, driven by
# playwright-core from npm) loads without errors or network, shows the
# verdict, charts with content, the flame graph and the tables, and names
# written as markup stay text.
source "$(dirname "$0")/lib.sh"

check="$STEPSCOPE_REPO/tests/integration/report_html_check.mjs"
[ -d "$STEPSCOPE_REPO/node_modules/playwright-core" ] || fail "node_modules missing: run scripts/setup"
[ -x /usr/bin/chromium ] || fail "/usr/bin/chromium missing: run scripts/setup"
img='<img src=x onerror=alert(1)>'
script='</script><script>alert(1)</script>'

# A recorded run: explicit steps, counters, and busy functions named like markup.
python=$(python_interpreters | tail -n 1)
expect_status 0 "$STEPSCOPE" record -o "$WORK/run.db" -- "$python" "$STEPSCOPE_REPO/tests/integration/programs/hostile_steps.py"
expect_status 0 "$STEPSCOPE" report "$WORK/run.db" --html "$WORK/run.html"
[ ! -s "$WORK/stdout" ] || fail "--html alone printed a report too"
if grep -qF "$img" "$WORK/run.html" || grep -qF "$script" "$WORK/run.html"; then fail "a name was written raw into the page"; fi
node "$check" "$WORK/run.html" --sections verdict,steps,counters,flame,functions,processes --text "$img" --text "$script" \
  > "$WORK/summary.json" || fail "browser check of the recorded run failed"
"$PY" - "$WORK/summary.json" <<'PY' || fail "summary: $(cat "$WORK/summary.json")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["verdict"].startswith("12 steps"), s["verdict"]  # no diagnosis yet: the summary
assert s["drawnCanvases"] >= 3, s
PY

# --json next to --html still writes the JSON report.
expect_status 0 "$STEPSCOPE" report "$WORK/run.db" --html "$WORK/again.html" --json
grep -q '"schema":"stepscope.report/1"' "$WORK/stdout" || fail "--html --json: no JSON on stdout"

# Findings, operators and GPU sections as the report JSON will carry them:
# each drawn from the data, names as text; the first finding is the verdict.
"$PY" - "$WORK/run.html" "$WORK/diagnosed.html" "$img" "$script" <<'PY'
import json, re, sys
page = open(sys.argv[1], encoding="utf-8").read()
pattern = re.compile(r'(<script type="application/json" id="stepscope-data">)(.*?)(</script>)', re.S)
data = json.loads(pattern.search(page).group(2))
img, script = sys.argv[3], sys.argv[4]
data["report"]["diagnosis"] = [
    {"id": "input_bound", "severity": "high", "title": "Input bound " + img, "evidence": [script, {"share": 0.58}],
     "recommendation": "raise num_workers " + script, "expected_speedup": 2.4},
    {"id": "gc_pauses", "severity": "low", "title": "GC pauses", "evidence": [], "recommendation": "", "expected_speedup": 1.01}]
data["report"]["ops"] = {"total_ns": 5000, "operators": [{"name": "aten::mm " + img, "count": 3, "self_ns": 3000},
                                                          {"name": "aten::add", "count": 9, "self_ns": 2000}]}
data["report"]["gpu"] = {"kernels": [{"name": script, "count": 1, "total_ns": 10}]}
text = json.dumps(data).replace("<", "\\u003c")
open(sys.argv[2], "w", encoding="utf-8").write(pattern.sub(lambda m: m.group(1) + text + m.group(3), page, count=1))
PY
node "$check" "$WORK/diagnosed.html" --sections verdict,ops,gpu,flame --text "Input bound $img" \
  --text "raise num_workers $script" --text "aten::mm $img" > "$WORK/summary.json" || fail "browser check of findings failed"
"$PY" -c 'import json,sys; s=json.load(open(sys.argv[1])); assert s["findings"] == 2 and s["verdict"].startswith("Input bound <img"), s' \
  "$WORK/summary.json" || fail "findings: $(cat "$WORK/summary.json")"

# A trace: no steps or counters, those sections stay hidden and nothing breaks.
if have_kineto; then
trace=$(ls "$KINETO"/critical_path/alexnet/*.json.gz | head -n 1)
expect_status 0 "$STEPSCOPE" report "$trace" --html "$WORK/trace.html"
node "$check" "$WORK/trace.html" --sections verdict,flame,functions > "$WORK/summary.json" || fail "browser check of a trace failed"
"$PY" -c 'import json,sys; s=json.load(open(sys.argv[1])); assert "steps" not in s["sections"] and "counters" not in s["sections"], s' \
  "$WORK/summary.json" || fail "trace sections: $(cat "$WORK/summary.json")"
fi
# An empty trace: only the summary, and nothing breaks.
echo '{"traceEvents": []}' > "$WORK/empty.json"
expect_status 0 "$STEPSCOPE" report "$WORK/empty.json" --html "$WORK/empty.html"
node "$check" "$WORK/empty.html" --sections verdict > /dev/null || fail "browser check of an empty trace failed"
echo "1 passed, 0 failed"
