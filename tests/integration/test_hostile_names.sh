# Names that come from a trace are escaped in every output format.
source "$(dirname "$0")/lib.sh"

# Quotes, markup, a CDATA terminator, a control character, semicolons,
# spaces, a newline and a backslash in names. (Invalid UTF-8, which only
# process memory can hold, is covered by the renderers' unit tests.)
printf '%s' '{"traceEvents": [
 {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "py \"x\" <script>alert(1)</script>"}},
 {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "w;1 ]]> \u0001"}},
 {"ph": "X", "cat": "cpu_op", "name": "a;b c\nd\\e", "ts": 10, "dur": 100, "pid": 1, "tid": 2},
 {"ph": "X", "cat": "cpu_op", "name": "<img src=x onerror=alert(1)>", "ts": 20, "dur": 30, "pid": 1, "tid": 2},
 {"ph": "X", "cat": "cpu_op", "name": "\"quoted\" & \u0007", "ts": 60, "dur": 10, "pid": 1, "tid": 2}]}' > "$WORK/hostile.json"

for format in collapsed speedscope svg; do
  expect_status 0 "$STEPSCOPE" export "$WORK/hostile.json" --format "$format" -o "$WORK/out.$format"
  "$PY" "$STEPSCOPE_REPO/tests/integration/check_exports.py" "$format" "$WORK/out.$format"
done
# Collapsed stacks are plain text; the formats a browser opens never carry markup from a name.
for format in speedscope svg; do
  if grep -q '<script>alert\|<img src' "$WORK/out.$format"; then fail "$format: markup from a name was written raw"; fi
done
# Three distinct leaf stacks survive as three lines: no name split a line.
[ "$(wc -l < "$WORK/out.collapsed")" -eq 3 ] || fail "collapsed: $(cat "$WORK/out.collapsed")"
echo "1 passed, 0 failed"
