# memory_pressure on real input. Host: a real program recorded inside a memory
# cgroup limited to 512 MiB (as a container would be) that holds ~85% of the
# limit fires, the same program at ~30% does not; the machine's own RAM is
# never approached. Device: the caching allocator's "[memory]" events of a
# real torch.profiler trace become counter tracks that match the trace, and a
# peak far below the GPU's memory raises no alarm.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/cgroup_lib.sh"
kineto=$KINETO
hold="$STEPSCOPE_REPO/tests/integration/programs/hold_memory.py"

# check JSON PYTHON: runs PYTHON with `d` = the report's diagnosis list,
# `ids` and `by` (id -> finding); a failed assert fails the test.
check() {
  "$PY" - "$1" "$2" <<'PYEOF' || fail "$(basename "$1"): check failed: $2"
import json, sys
report = json.load(open(sys.argv[1]))
d = report["diagnosis"]
ids = [f["id"] for f in d]
by = {f["id"]: f for f in d}
print(sys.argv[1].rsplit("/", 1)[-1], [(f["id"], f["title"], f["evidence"]) for f in d])
exec(sys.argv[2])
PYEOF
}

if have_kineto; then
# --- device: df_index_resolver's 26 770 CUDA memory events -------------------
expect_status 0 "$STEPSCOPE" import "$kineto/df_index_resolver/df_index_resolver.json.gz" -o "$WORK/dfir.db"
PYTHONPATH="$STEPSCOPE_REPO/tools" "$PY" - "$kineto/df_index_resolver/df_index_resolver.json.gz" "$WORK/dfir.db" <<'PYEOF' || fail "memory events of df_index_resolver"
import gzip, json, sys
from run_samples import open_with_samples
trace = json.load(gzip.open(sys.argv[1], "rt"))
events = [e for e in trace["traceEvents"] if e.get("name") == "[memory]" and e["args"]["Device Type"] == 1]
db = open_with_samples(sys.argv[2])
rows = db.execute("""SELECT n.value, t.pid, COUNT(*), MAX(v.value), MIN(v.ts_ns), MAX(v.ts_ns)
                     FROM counter_values v JOIN counter_tracks t ON t.id = v.track JOIN strings n ON n.id = t.name
                     WHERE n.value LIKE 'process.gpu.%' GROUP BY t.id ORDER BY n.value""").fetchall()
print(rows)
assert len(events) == 26770, len(events)
want = [("process.gpu.1.allocated_bytes", 783658, len(events), max(e["args"]["Total Allocated"] for e in events)),
        ("process.gpu.1.reserved_bytes", 783658, len(events), max(e["args"]["Total Reserved"] for e in events))]
assert [r[:4] for r in rows] == want, (rows, want)
assert rows[0][4] == min(e["ts"] for e in events) * 1000 and rows[0][5] == max(e["ts"] for e in events) * 1000, rows
PYEOF
# Its peak: 6.2 GiB allocated and 11.9 GiB reserved of a 31.7 GiB V100 (19 %
# and 37.5 %): far from capacity, no finding.
expect_status 0 "$STEPSCOPE" report "$kineto/df_index_resolver/df_index_resolver.json.gz" --json -o "$WORK/dfir.json"
check "$WORK/dfir.json" 'assert "memory_pressure" not in ids, ids'

# No trace in testdata comes near its GPU's memory: only df_index_resolver has
# memory events, and the others have neither events nor NVML counters.
for trace in critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz \
             trace_diff/test/test.json.gz nccl_parser_config/nccl_data.json.gz; do
  expect_status 0 "$STEPSCOPE" report "$kineto/$trace" --json -o "$WORK/quiet.json"
  check "$WORK/quiet.json" 'assert "memory_pressure" not in ids, ids'
done
fi

# --- host: a real program in a 512 MiB memory cgroup ---------------------------
limit=$((512 << 20))
if ! make_cgroup memory cgroup; then
  echo "host part skipped: cannot make a child memory cgroup (needs root and a writable cgroup v1 memory hierarchy)"
  echo "1 passed, 0 failed"
  exit 0
fi
echo "$limit" > "$cgroup/memory.limit_in_bytes" || fail "cannot set the limit of $cgroup"
# No swap for the group: the test is about resident memory near the limit.
echo 0 > "$cgroup/memory.swappiness" 2>/dev/null || true

# hold NAME MIB: records hold_memory.py holding MIB MiB for 2 s in the cgroup.
hold() {
  expect_status 0 in_cgroup "$cgroup" "$STEPSCOPE" record -o "$WORK/$1.db" -- "$PY" "$hold" "$2" 2
  grep '^summary: ' "$WORK/stdout" | cut -c10- > "$WORK/$1.summary" || fail "$1: no summary: $(cat "$WORK/stdout")"
  expect_status 0 "$STEPSCOPE" report "$WORK/$1.db" --json -o "$WORK/$1.json"
}

hold high 430
PYTHONPATH="$STEPSCOPE_REPO/tools" "$PY" - "$WORK/high.db" "$limit" <<'PYEOF' || fail "the cgroup's counters in the run"
import sys
from run_samples import open_with_samples
db = open_with_samples(sys.argv[1])
def values(name):
    return [v for (v,) in db.execute("""SELECT v.value FROM counter_values v JOIN counter_tracks t ON t.id = v.track
                                        JOIN strings n ON n.id = t.name WHERE n.value = ?""", (name,))]
limits, usage, working = values("cgroup.memory.limit_bytes"), values("cgroup.memory.usage_bytes"), values("cgroup.memory.working_set_bytes")
assert limits and set(limits) == {float(sys.argv[2])}, set(limits)
assert usage and len(usage) == len(working) and all(w <= u for u, w in zip(usage, working)), (usage, working)
assert max(usage) > 430 * 2**20, max(usage)  # the held memory is charged to the group
PYEOF
check "$WORK/high.json" '
import json
f = by["memory_pressure"]
assert f["expected_speedup"] is None and "host memory" in f["title"], f
e = [x for x in f["evidence"] if "resident memory peaked" in x]
assert e and " of 512 MiB (" in e[0] and "), the limit of the memory cgroup (the machine has" in e[0], f["evidence"]
# The peak the recorder saw against the program'"'"'s own high-water mark: the
# 2 s plateau is polled 20 times, so they agree to a few MiB.
hwm = json.load(open(sys.argv[1].replace(".json", ".summary")))["vm_hwm_bytes"]
seen = float(e[0].split("peaked at ")[1].split(" MiB")[0])
assert abs(seen - hwm / 2**20) <= 8, (seen, hwm / 2**20)
assert 0.8 <= hwm / 2**29 < 0.95, hwm
'

# monitor, run inside the cgroup, shows its limit too (jsonl; the table's line).
expect_status 0 in_cgroup "$cgroup" "$STEPSCOPE" monitor --interval 0.2 --count 2 --format jsonl
tail -n 1 "$WORK/stdout" | "$PY" -c '
import json, sys
s = json.loads(sys.stdin.read())["system"]
assert s["cgroup_memory_limit_bytes"] == 512 << 20, s
assert 0 < s["cgroup_memory_working_set_bytes"] <= s["cgroup_memory_usage_bytes"] < 512 << 20, s
' || fail "monitor jsonl in the cgroup: $(tail -n 1 "$WORK/stdout")"
expect_status 0 in_cgroup "$cgroup" "$STEPSCOPE" monitor --interval 0.2 --count 2
grep -q "^Cgroup memory  working set .* limit 512" "$WORK/stdout" || fail "monitor table in the cgroup: $(cat "$WORK/stdout")"

hold low 150
check "$WORK/low.json" 'assert "memory_pressure" not in ids, ids'
echo "1 passed, 0 failed"
