# `report` on several traces of one job (files or a directory): one device
# section per rank, and the per-rank comparison with its stragglers.
source "$(dirname "$0")/lib.sh"
kineto=$KINETO

# A tiny two-rank job: rank 1's steps take 14 ms against rank 0's 10 ms and
# its kernels run longer; four ProfilerSteps each, the last one cut short.
"$PY" - "$WORK/job" <<'PYEOF'
import json, os, sys
os.makedirs(sys.argv[1])
for rank, step_us, kernel_us in ((0, 10_000, 4_000), (1, 14_000, 6_000)):
    events, corr = [], 0
    for i in range(4):
        start = 1_000 + i * step_us
        events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1, "tid": 1,
                       "ts": start, "dur": step_us})
        for k in range(2):
            corr += 1
            launch = start + 100 + k * 10
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                           "ts": launch, "dur": 5, "args": {"correlation": corr}})
            events.append({"ph": "X", "cat": "kernel", "name": "gemm" if k == 0 else "ncclDevKernel_AllReduce",
                           "pid": 0, "tid": 7 + k, "ts": launch + 20, "dur": kernel_us,
                           "args": {"correlation": corr, "stream": 7 + k}})
    trace = {"distributedInfo": {"rank": rank, "world_size": 2}, "traceEvents": events}
    json.dump(trace, open(os.path.join(sys.argv[1], f"rank{rank}.json"), "w"))
PYEOF
expect_status 0 "$STEPSCOPE" report "$WORK/job" --json -o "$WORK/job.json"
"$PY" - "$WORK/job.json" <<'PYEOF' || fail "two-rank comparison: $(head -c 1500 "$WORK/job.json")"
import json, sys
gpu = json.load(open(sys.argv[1]))["gpu"]
ranks = gpu["ranks"]
assert [r["rank"] for r in ranks] == [0, 1], ranks
for r, step, kernel in zip(ranks, (10_000, 14_000), (4_000, 6_000)):
    assert r["complete_steps_only"] and r["profiler_steps"] == 4 and r["device_events"] == 6, r
    assert abs(r["step_mean_us"] - step) < 1e-6, r["step_mean_us"]
    assert abs(r["temporal"]["compute_us"] - 3 * kernel) < 1e-6, r["temporal"]
    assert abs(r["temporal"]["communication_us"] - 3 * kernel) < 1e-6
    assert abs(r["temporal"]["comm_comp_overlap"] - (kernel - 10) / kernel) < 1e-9
metrics = {m["metric"]: m for m in gpu["comparison"]["metrics"]}
step = metrics["step_time"]
assert abs(step["median_us"] - 12_000) < 1e-6 and abs(step["threshold_us"] - 12_600) < 1e-6, step
assert [v["straggler"] for v in step["values"]] == [False, True], step
assert [v["straggler"] for v in metrics["compute"]["values"]] == [False, True], metrics["compute"]
PYEOF
expect_status 0 "$STEPSCOPE" report "$WORK/job/rank0.json" "$WORK/job/rank1.json"
grep -q "step_time: median 12.000 ms, straggler rank 1" "$WORK/stdout" || fail "text lacks the straggler: $(cat "$WORK/stdout")"

if have_kineto; then
# Two sampled ranks of a real job: each rank's figures equal its own report's.
expect_status 0 "$STEPSCOPE" report "$kineto/trace_filter" --json -o "$WORK/both.json"
for i in 0 1; do
  expect_status 0 "$STEPSCOPE" report "$kineto/trace_filter/sampled_rank-$i.json.gz" --json -o "$WORK/one$i.json"
done
"$PY" - "$WORK/both.json" "$WORK/one0.json" "$WORK/one1.json" <<'PYEOF' || fail "directory ranks differ from single reports"
import json, sys
both = json.load(open(sys.argv[1]))["gpu"]
singles = [json.load(open(p))["gpu"]["ranks"][0] for p in sys.argv[2:]]
assert [r["rank"] for r in both["ranks"]] == [0, 1]
for got, want in zip(both["ranks"], singles):
    assert got == want, (got["source"], want["source"])
assert "comparison" in both and all(len(m["values"]) == 2 for m in both["comparison"]["metrics"])
PYEOF
# Every rank is diagnosed: one finding per rule, listing the ranks whose own
# report has it, with the figures of the rank with the highest bound.
"$PY" - "$WORK/both.json" "$WORK/one0.json" "$WORK/one1.json" <<'PYEOF' || fail "merged diagnosis of the ranks"
import json, sys
merged = json.load(open(sys.argv[1]))["diagnosis"]
singles = [json.load(open(p))["diagnosis"] for p in sys.argv[2:]]
ids = [f["id"] for f in merged]
assert len(ids) == len(set(ids)) and "gpu_idle" in ids, ids
assert set(ids) == {f["id"] for d in singles for f in d}, (ids, singles)
for f in merged:
    on = ["rank %d" % i for i, d in enumerate(singles) if f["id"] in [g["id"] for g in d]]
    assert f["ranks"] == on, (f["id"], f["ranks"], on)
    best = max((g for d in singles for g in d if g["id"] == f["id"]), key=lambda g: g["expected_speedup"] or 0)
    assert f["share"] == best["share"] and f["evidence"][1:] == best["evidence"], (f, best)
    assert f["evidence"][0].startswith("found on "), f["evidence"][0]
assert all("ranks" not in f for d in singles for f in d)
PYEOF
fi

expect_status 2 "$STEPSCOPE" report "$WORK"/no-such-dir
mkdir "$WORK/empty"
expect_status 2 "$STEPSCOPE" report "$WORK/empty"
expect_stderr_contains "no traces"
echo "4 passed, 0 failed"
