# Import a real torch.profiler trace, export every format, and parse each
# output independently (check_exports.py).
source "$(dirname "$0")/lib.sh"

need_kineto
trace=$(ls "$KINETO"/ns_resolution_trace/*.json.gz | head -n 1)

expect_status 0 "$STEPSCOPE" import "$trace" -o "$WORK/run.db"
for format in collapsed speedscope svg; do
  expect_status 0 "$STEPSCOPE" export "$WORK/run.db" --format "$format" -o "$WORK/out.$format"
  "$PY" "$STEPSCOPE_REPO/tests/integration/check_exports.py" "$format" "$WORK/out.$format"
done

# The fast path (a trace read directly) gives the same profile as its run file.
expect_status 0 "$STEPSCOPE" export "$trace" --format collapsed -o "$WORK/direct.collapsed"
cmp "$WORK/direct.collapsed" "$WORK/out.collapsed" || fail "trace and run file export differently"

# Standard output is the default destination.
expect_status 0 "$STEPSCOPE" export "$WORK/run.db" --format collapsed
cmp "$WORK/stdout" "$WORK/out.collapsed" || fail "-o - differs from the file"
echo "1 passed, 0 failed"
