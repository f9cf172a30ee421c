# The run file's schema 6 (samples, counter values, spans, frames and stacks in compressed blocks,
# docs/run-format.md) against schema 5 (a row per frame and stack), 4 (a row per span too), 3 (a
# row per counter value too) and 2 (a row per sample too) on the same recording of a training loop
# with two DataLoader workers: the same report --json, the same profile, a window read through the
# time indexes the same as the whole file cut, and the samples, counter values, spans, frames and
# stacks a fraction of the bytes.
source "$(dirname "$0")/lib.sh"
require_venv_torch

expect_status 0 "$STEPSCOPE" record -o "$WORK/v6.db" -- "$venv_python" \
  "$STEPSCOPE_REPO/examples/train_lm.py" --num-workers 2 --steps 40
for version in 5 4 3 2; do
  "$PY" "$STEPSCOPE_REPO/tools/run_samples.py" --schema-$version "$WORK/v6.db" "$WORK/v$version.db"
  [ "$(run_sql "$WORK/v$version.db" "SELECT value FROM meta WHERE key = 'schema_version'")" = $version ] \
    || fail "no schema-$version copy"
done

# same_output NAME ARGS...: the command's output on the five files is the same, but for the file's name.
same_output() {
  local name=$1 version; shift
  "$STEPSCOPE" "$@" "$WORK/v6.db" > "$WORK/$name.v6" || fail "$name on v6.db"
  for version in 5 4 3 2; do
    "$STEPSCOPE" "$@" "$WORK/v$version.db" | sed "s#$WORK/v$version.db#$WORK/v6.db#g" > "$WORK/$name.v$version" \
      || fail "$name on v$version.db"
    cmp -s "$WORK/$name.v6" "$WORK/$name.v$version" \
      || fail "$name differs in v$version.db: $(diff "$WORK/$name.v$version" "$WORK/$name.v6" | head -c 800)"
  done
}
# v5.db's frames and stacks are rows tools/run_samples.py decoded from v6.db's blocks: the same
# output from both checks its decoder against stepscope's.
same_output report report --json
same_output collapsed export --format collapsed --idle
# A window of seconds: read through the indexes from v6.db to v3.db, cut from the whole of v2.db.
same_output window report --json --window 1.5:-0.5
same_output last_second export --format collapsed --idle --window -1:
grep -q '"window":"1.5:-0.5"' "$WORK/window.v6" || fail "the window is not noted"

samples=$(run_sql "$WORK/v6.db" "SELECT COUNT(*) FROM samples")
values=$(run_sql "$WORK/v6.db" "SELECT COUNT(*) FROM counter_values")
spans=$(run_sql "$WORK/v6.db" "SELECT COUNT(*) FROM spans")
stacks=$(run_sql "$WORK/v6.db" "SELECT COUNT(*) FROM stacks")
[ "$samples" -gt 500 ] || fail "only $samples samples"
[ "$values" -gt 500 ] || fail "only $values counter values"
[ "$spans" -gt 200 ] || fail "only $spans spans"
[ "$stacks" -gt 200 ] || fail "only $stacks stacks"
"$PY" - "$WORK/v6.db" "$WORK/v5.db" "$WORK/v4.db" "$WORK/v3.db" "$WORK/v2.db" "$samples" "$values" "$spans" \
  "$stacks" <<'PYEOF' || fail "samples, counter values, spans or stacks take too many bytes"
import sqlite3, sys
# Bytes the tables use (pages less their free space): a recording this short fills two or three
# pages, and counting whole pages would measure where the last one happened to end.
def used_bytes(path, *names):
    db = sqlite3.connect(path)
    marks = ",".join("?" * len(names))
    query = f"SELECT total(pgsize - unused) FROM dbstat WHERE name IN ({marks})"
    return db.execute(query, names).fetchone()[0]
v6_path, v5_path, v4_path, v3_path, v2_path = sys.argv[1:6]
samples, values, spans, stacks = (int(n) for n in sys.argv[6:10])
in_blocks = used_bytes(v6_path, "sample_blocks", "sample_blocks_by_time") / samples
as_rows = used_bytes(v2_path, "samples") / samples
print(f"bytes per sample: {in_blocks:.2f} in blocks, {as_rows:.2f} as rows")
assert in_blocks <= 8 and in_blocks < as_rows / 3, (in_blocks, as_rows)
in_blocks = used_bytes(v6_path, "counter_blocks", "counter_blocks_by_time") / values
as_rows = used_bytes(v3_path, "counter_values") / values
print(f"bytes per counter value: {in_blocks:.2f} in blocks, {as_rows:.2f} as rows")
assert in_blocks < as_rows / 3, (in_blocks, as_rows)
in_blocks = used_bytes(v6_path, "span_blocks", "span_blocks_by_time") / spans
as_rows = used_bytes(v4_path, "spans") / spans
print(f"bytes per span: {in_blocks:.2f} in blocks, {as_rows:.2f} as rows")
assert in_blocks < as_rows / 3, (in_blocks, as_rows)
in_blocks = used_bytes(v6_path, "frame_blocks", "stack_blocks") / stacks
as_rows = used_bytes(v5_path, "frames", "stacks") / stacks
print(f"bytes of frames and stacks per stack: {in_blocks:.2f} in blocks, {as_rows:.2f} as rows")
assert in_blocks < as_rows / 3, (in_blocks, as_rows)
PYEOF
echo "run schema: ok"
