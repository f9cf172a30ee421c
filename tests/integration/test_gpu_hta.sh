# The device analyses of `report` against Holistic Trace Analysis run on the
# same real traces (CUDA, ROCm, MTIA, NCCL, no GPU; and one that torch 2.11
# wrote on an H200 with CUDA 13, tests/data/gpu), and against computations on
# the raw JSON in check_gpu_hta.py.
source "$(dirname "$0")/lib.sh"
check="$STEPSCOPE_REPO/tests/integration/check_gpu_hta.py"
need_kineto
kineto=$KINETO
"$PY" -c 'import hta' 2>/dev/null || fail "HolisticTraceAnalysis is not installed in $PY (scripts/setup)"

passed=0
pairs=()
for trace in \
    ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz \
    amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz \
    nccl_parser_config/nccl_data.json.gz \
    mtia_inference_trace/mtia_inference_rank_0.json.gz \
    critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz \
    cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz; do
  report="$WORK/$(basename "$trace").report.json"
  expect_status 0 "$STEPSCOPE" report "$kineto/$trace" --json -o "$report"
  pairs+=("$kineto/$trace" "$report")
  passed=$((passed + 1))
done
h200="$STEPSCOPE_REPO/tests/data/gpu/small-copies.trace.json.gz"
expect_status 0 "$STEPSCOPE" report "$h200" --json -o "$WORK/h200.report.json"
pairs+=("$h200" "$WORK/h200.report.json")
passed=$((passed + 1))
# One Python process for all: HTA and pandas load once.
"$PY" "$check" compare "${pairs[@]}" 2>"$WORK/check.err" ||
  fail "$(grep -v Warning "$WORK/check.err" | grep -v '^  ' | head -30)"

# The MTIA training trace has DMA events without a stream argument, which HTA
# counts as host events and stepscope as device activity (they lie on the
# device's track). HTA needs 70 s for this trace, so the check is stepscope's
# count against the raw JSON.
mtia="$kineto/mtia_trace_single_rank/mtia_rank_0.json.gz"
expect_status 0 "$STEPSCOPE" report "$mtia" --json -o "$WORK/r.json"
"$PY" - "$mtia" "$WORK/r.json" <<'PYEOF' || fail "MTIA device events"
import gzip, json, sys
events = json.load(gzip.open(sys.argv[1]))["traceEvents"]
want = sum(1 for e in events if e.get("cat") == "mtia_ccp_events" and e.get("ph") == "X")
rank = json.load(open(sys.argv[2]))["gpu"]["ranks"][0]
assert rank["device_events"] == want, (rank["device_events"], want)
assert rank["rank"] == 0 and not rank["complete_steps_only"]
assert {c["class"] for c in rank["kernel_classes"]} == {"memory", "computation"}, rank["kernel_classes"]
PYEOF
passed=$((passed + 1))

# Edge cases: no GPU (null figures, no rank), complete steps said, AMD names.
expect_status 0 "$STEPSCOPE" report "$kineto/rank_unavailable/rank_not_found.json.gz" --json -o "$WORK/r.json"
"$PY" - "$WORK/r.json" <<'PYEOF' || fail "rank_unavailable: $(head -c 600 "$WORK/r.json")"
import json, sys
rank = json.load(open(sys.argv[1]))["gpu"]["ranks"][0]
assert rank["rank"] is None and rank["device_events"] == 0 and rank["temporal"] is None, rank
PYEOF
expect_status 0 "$STEPSCOPE" report "$kineto/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"
grep -q "complete steps only (1 of 2 ProfilerSteps" "$WORK/stdout" || fail "AMD text lacks the complete-steps note: $(cat "$WORK/stdout")"
grep -q "hipLaunchKernel\|launches" "$WORK/stdout" || fail "AMD launches not found: $(cat "$WORK/stdout")"
# The text report shows the pageable and small copies per direction, the
# numbers the JSON has (alexnet: pageable HtoD copies; trace_diff/test: small DtoH).
for trace in critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz trace_diff/test/test.json.gz; do
  expect_status 0 "$STEPSCOPE" report "$kineto/$trace" --json -o "$WORK/copies.json"
  expect_status 0 "$STEPSCOPE" report "$kineto/$trace"
  "$PY" - "$WORK/copies.json" "$WORK/stdout" <<'PYEOF' || fail "$trace: copy counts in the text report"
import json, re, sys
directions = json.load(open(sys.argv[1]))["gpu"]["ranks"][0]["memcpy"]["directions"]
text = open(sys.argv[2]).read()
seen = 0
for d in directions:
    line = [l for l in text.splitlines() if re.match(r"\s+%s\s+%d ops" % (d["direction"], d["count"]), l)]
    assert len(line) == 1, (d, text)
    for key, words in (("pageable", "pageable"), ("small", "small < 64 KiB")):
        want = "%d %s (" % (d[key], words)
        assert (want in line[0]) == (d[key] > 0), (want, line[0])
        seen += d[key]
assert seen > 0, directions
PYEOF
  passed=$((passed + 1))
done
echo "$passed passed, 0 failed"
