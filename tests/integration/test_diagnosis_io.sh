# io_bound_workers on a real program: DataLoader workers that read their items
# with O_DIRECT from a disk throttled to 8 MiB/s (a blkio cgroup: slow network
# storage, made reproducible) block in uninterruptible sleep, and the rule
# must say so, with the disk-wait share the test computes again from the
# run's own samples. The same loop reading the same file from the page cache
# (same throttle, no disk reads) must not. The throttle makes the result hold
# on a loaded machine: a read takes ~30 ms in D state against well under a
# millisecond of CPU, where an unthrottled virtual disk answers so fast that
# a CPU-starved worker shows more runnable (R) samples than D ones.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/cgroup_lib.sh"
venv_python="$STEPSCOPE_REPO/.venv/bin/python"
loader="$STEPSCOPE_REPO/tests/integration/programs/disk_loader.py"
export STEPSCOPE_PYTHON_DIR="$STEPSCOPE_REPO/python"

"$venv_python" -c 'import torch' 2>/dev/null || skip_test "no torch in $venv_python (run scripts/setup)"
case $(stat -f -c %T "$WORK") in
  tmpfs|ramfs) skip_test "$WORK is in memory ($(stat -f -c %T "$WORK")): no disk to wait on" ;;
esac

data="$WORK/items.bin"
head -c $((16 << 20)) /dev/urandom > "$data"
sync "$data"
# The whole disk under the file (a throttle on a partition does not apply).
dev=$(stat -c '%Hd:%Ld' "$data")
[ -e "/sys/dev/block/$dev/partition" ] && dev=$(cat "/sys/dev/block/$dev/../dev")
make_cgroup blkio cgroup || skip_test "cannot make a child blkio cgroup (needs root and a writable cgroup v1 blkio hierarchy)"
echo "$dev $((8 << 20))" > "$cgroup/blkio.throttle.read_bps_device" 2>/dev/null \
  || skip_test "cannot throttle reads of block device $dev in $cgroup"

# record NAME ARGS...: records the loader in the throttled cgroup, reports it.
record() {
  local name=$1; shift
  expect_status 0 in_cgroup "$cgroup" "$STEPSCOPE" record -o "$WORK/$name.db" -- "$venv_python" "$loader" "$data" "$@"
  expect_status 0 "$STEPSCOPE" report "$WORK/$name.db" --json -o "$WORK/$name.json"
}

# check NAME PYTHON: runs PYTHON with `d`, `ids`, `by` (id -> finding) and
# `disk_share`: of the workers' samples in steady steps that are not idle,
# the share in disk wait, counted here from the run file.
check() {
  PYTHONPATH="$STEPSCOPE_REPO/tools" "$PY" - "$WORK/$1.json" "$WORK/$1.db" "$2" <<'PYEOF' || fail "$1: check failed: $2"
import json, sys
from run_samples import open_with_samples
report = json.load(open(sys.argv[1]))
d = report["diagnosis"]
ids = [f["id"] for f in d]
by = {f["id"]: f for f in d}
steps = report["steps"]["per_step"]
steady = [s for s in steps if not s["warmup"]]
start, end = steady[0]["start_ns"], steps[-1]["start_ns"] + steps[-1]["time_ns"]
db = open_with_samples(sys.argv[2])
workers = [p for (p,) in db.execute("""SELECT DISTINCT s.pid FROM spans s JOIN strings n ON n.id = s.name
                                       WHERE n.value = 'worker_batch'""")]
marks = ",".join("?" * len(workers))
states = dict(db.execute(f"""SELECT state, COUNT(*) FROM samples WHERE pid IN ({marks}) AND stack != 0
                             AND ts_ns >= ? AND ts_ns < ? GROUP BY state""", (*workers, start, end)).fetchall())
busy = sum(n for state, n in states.items() if state != 2)  # 2: idle (S)
disk_share = states.get(3, 0) / busy if busy else 0  # 3: disk wait (D)
print(sys.argv[1].rsplit("/", 1)[-1], "workers", workers, "states", states, "disk share", round(disk_share, 3),
      [(f["id"], round(f["share"], 3)) for f in d])
exec(sys.argv[3])
PYEOF
}

record uncached --uncached --steps 30
check uncached '
f = by["io_bound_workers"]
assert ids[0] == "io_bound_workers" and "input_bound" not in ids and "dataloader_workers_saturated" not in ids, ids
assert disk_share >= 0.3, disk_share
quoted = [int(e.split("%")[0]) for e in f["evidence"] if e.endswith("busy samples are in disk wait (D state)")]
assert quoted and abs(quoted[0] - 100 * disk_share) <= 0.5 + 1e-9, (quoted, disk_share)
assert f["share"] == report["steps"]["data_wait_fraction"] >= 0.1, f["share"]
assert any("DataLoader workers: 2 processes" in e for e in f["evidence"]), f["evidence"]
assert "shards" in f["recommendation"]
'

record cached --steps 30
check cached 'assert "io_bound_workers" not in ids and disk_share < 0.3, (ids, disk_share)'
echo "1 passed, 0 failed"
