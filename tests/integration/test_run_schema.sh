# The run file's schema 3 (samples in compressed blocks, docs/run-format.md) against schema 2 (a
# row per sample) on the same recording of a training loop with two DataLoader workers: the
# same report --json, the same profile, a window read through the time index the same as the
# whole file cut, and the samples a fraction of the bytes.
source "$(dirname "$0")/lib.sh"
require_venv_torch

expect_status 0 "$STEPSCOPE" record -o "$WORK/v3.db" -- "$venv_python" \
  "$STEPSCOPE_REPO/examples/train_lm.py" --num-workers 2 --steps 40
"$PY" "$STEPSCOPE_REPO/tools/run_samples.py" --schema-2 "$WORK/v3.db" "$WORK/v2.db"
[ "$(run_sql "$WORK/v2.db" "SELECT value FROM meta WHERE key = 'schema_version'")" = 2 ] || fail "no schema-2 copy"

# same_output NAME ARGS...: the command's output on both files is the same, but for the file's name.
same_output() {
  local name=$1; shift
  "$STEPSCOPE" "$@" "$WORK/v3.db" > "$WORK/$name.v3" || fail "$name on v3.db"
  "$STEPSCOPE" "$@" "$WORK/v2.db" | sed "s#$WORK/v2.db#$WORK/v3.db#g" > "$WORK/$name.v2" || fail "$name on v2.db"
  cmp -s "$WORK/$name.v3" "$WORK/$name.v2" || fail "$name differs: $(diff "$WORK/$name.v2" "$WORK/$name.v3" | head -c 800)"
}
same_output report report --json
same_output collapsed export --format collapsed --idle
# A window of seconds: read through the index from v3.db, cut from the whole of v2.db.
same_output window report --json --window 1.5:-0.5
same_output last_second export --format collapsed --idle --window -1:
grep -q '"window":"1.5:-0.5"' "$WORK/window.v3" || fail "the window is not noted"

samples=$(run_sql "$WORK/v3.db" "SELECT COUNT(*) FROM samples")
[ "$samples" -gt 500 ] || fail "only $samples samples"
"$PY" - "$WORK/v3.db" "$WORK/v2.db" "$samples" <<'PYEOF' || fail "samples take too many bytes"
import sqlite3, sys
# Bytes the tables use (pages less their free space): a recording this short fills two or three
# pages, and counting whole pages would measure where the last one happened to end.
def used_bytes(path, *names):
    db = sqlite3.connect(path)
    marks = ",".join("?" * len(names))
    query = f"SELECT total(pgsize - unused) FROM dbstat WHERE name IN ({marks})"
    return db.execute(query, names).fetchone()[0]
samples = int(sys.argv[3])
v3 = used_bytes(sys.argv[1], "sample_blocks", "sample_blocks_by_time") / samples
v2 = used_bytes(sys.argv[2], "samples") / samples
print(f"bytes per sample: {v3:.2f} in blocks, {v2:.2f} as rows")
assert v3 <= 8 and v3 < v2 / 3, (v3, v2)
PYEOF
echo "run schema: ok"
