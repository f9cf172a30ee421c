# Device time of operators on real CUDA and ROCm traces, against Kineto's own
# link: a kernel's "External id" is the id of the cpu op that launched it.
# stepscope instead follows the kernel's correlation to its runtime call and
# takes the innermost cpu op around that call; both must give each op the
# same self device time.
source "$(dirname "$0")/lib.sh"
need_kineto
kineto=$KINETO
passed=0
for trace in ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz \
             nccl_parser_config/nccl_data.json.gz \
             amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz; do
  expect_status 0 "$STEPSCOPE" report "$kineto/$trace" --json -o "$WORK/report.json"
  "$PY" - "$kineto/$trace" "$WORK/report.json" <<'PYEOF' || fail "$trace: self device time differs from Kineto's External id link"
import collections, gzip, json, sys
events = json.load(gzip.open(sys.argv[1]))["traceEvents"]
op_name = {}
for e in events:
    if e.get("cat") == "cpu_op" and "External id" in e.get("args", {}):
        op_name[e["args"]["External id"]] = e["name"]
want = collections.defaultdict(float)
for e in events:
    if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e.get("ph") == "X":
        name = op_name.get(e["args"].get("External id"))
        if name is not None:
            want[name] += float(e["dur"])
got = {o["name"]: o["self_device_us"] for o in json.load(open(sys.argv[2]))["ops"] if o["kind"] == "host"}
bad = [(n, got.get(n, 0), w) for n, w in want.items() if abs(got.get(n, 0) - w) > 0.01 + 1e-6 * w]
bad += [(n, g, 0) for n, g in got.items() if g and n not in want]
assert not bad, bad[:10]
print(f"{len(want)} ops with device time agree")
PYEOF
  passed=$((passed + 1))
done
echo "$passed passed, 0 failed"
