# The run file's schema 5 (samples, counter values and spans in compressed blocks,
# docs/run-format.md) against schema 4 (a row per span), 3 (a row per counter value too) and 2 (a
# row per sample too) on the same recording of a training loop with two DataLoader workers: the
# same report --json, the same profile, a window read through the time indexes the same as the
# whole file cut, and the samples, counter values and spans a fraction of the bytes.
source "$(dirname "$0")/lib.sh"
require_venv_torch

expect_status 0 "$STEPSCOPE" record -o "$WORK/v5.db" -- "$venv_python" \
  "$STEPSCOPE_REPO/examples/train_lm.py" --num-workers 2 --steps 40
for version in 4 3 2; do
  "$PY" "$STEPSCOPE_REPO/tools/run_samples.py" --schema-$version "$WORK/v5.db" "$WORK/v$version.db"
  [ "$(run_sql "$WORK/v$version.db" "SELECT value FROM meta WHERE key = 'schema_version'")" = $version ] \
    || fail "no schema-$version copy"
done

# same_output NAME ARGS...: the command's output on the four files is the same, but for the file's name.
same_output() {
  local name=$1 version; shift
  "$STEPSCOPE" "$@" "$WORK/v5.db" > "$WORK/$name.v5" || fail "$name on v5.db"
  for version in 4 3 2; do
    "$STEPSCOPE" "$@" "$WORK/v$version.db" | sed "s#$WORK/v$version.db#$WORK/v5.db#g" > "$WORK/$name.v$version" \
      || fail "$name on v$version.db"
    cmp -s "$WORK/$name.v5" "$WORK/$name.v$version" \
      || fail "$name differs in v$version.db: $(diff "$WORK/$name.v$version" "$WORK/$name.v5" | head -c 800)"
  done
}
same_output report report --json
same_output collapsed export --format collapsed --idle
# A window of seconds: read through the indexes from v5.db, v4.db and v3.db, cut from the whole of v2.db.
same_output window report --json --window 1.5:-0.5
same_output last_second export --format collapsed --idle --window -1:
grep -q '"window":"1.5:-0.5"' "$WORK/window.v5" || fail "the window is not noted"

samples=$(run_sql "$WORK/v5.db" "SELECT COUNT(*) FROM samples")
values=$(run_sql "$WORK/v5.db" "SELECT COUNT(*) FROM counter_values")
spans=$(run_sql "$WORK/v5.db" "SELECT COUNT(*) FROM spans")
[ "$samples" -gt 500 ] || fail "only $samples samples"
[ "$values" -gt 500 ] || fail "only $values counter values"
[ "$spans" -gt 200 ] || fail "only $spans spans"
"$PY" - "$WORK/v5.db" "$WORK/v4.db" "$WORK/v3.db" "$WORK/v2.db" "$samples" "$values" "$spans" <<'PYEOF' \
  || fail "samples, counter values or spans take too many bytes"
import sqlite3, sys
# Bytes the tables use (pages less their free space): a recording this short fills two or three
# pages, and counting whole pages would measure where the last one happened to end.
def used_bytes(path, *names):
    db = sqlite3.connect(path)
    marks = ",".join("?" * len(names))
    query = f"SELECT total(pgsize - unused) FROM dbstat WHERE name IN ({marks})"
    return db.execute(query, names).fetchone()[0]
v5_path, v4_path, v3_path, v2_path = sys.argv[1:5]
samples, values, spans = (int(n) for n in sys.argv[5:8])
in_blocks = used_bytes(v5_path, "sample_blocks", "sample_blocks_by_time") / samples
as_rows = used_bytes(v2_path, "samples") / samples
print(f"bytes per sample: {in_blocks:.2f} in blocks, {as_rows:.2f} as rows")
assert in_blocks <= 8 and in_blocks < as_rows / 3, (in_blocks, as_rows)
in_blocks = used_bytes(v5_path, "counter_blocks", "counter_blocks_by_time") / values
as_rows = used_bytes(v3_path, "counter_values") / values
print(f"bytes per counter value: {in_blocks:.2f} in blocks, {as_rows:.2f} as rows")
assert in_blocks < as_rows / 3, (in_blocks, as_rows)
in_blocks = used_bytes(v5_path, "span_blocks", "span_blocks_by_time") / spans
as_rows = used_bytes(v4_path, "spans") / spans
print(f"bytes per span: {in_blocks:.2f} in blocks, {as_rows:.2f} as rows")
assert in_blocks < as_rows / 3, (in_blocks, as_rows)
PYEOF
echo "run schema: ok"
