# The binary's help, version and bad-input handling.
source "$(dirname "$0")/lib.sh"

expect_status 0 "$STEPSCOPE" --help
grep -q "export" "$WORK/stdout" || fail "--help does not list export"
expect_status 0 "$STEPSCOPE" --version
grep -qE '^stepscope [0-9]+\.[0-9]+\.[0-9]+' "$WORK/stdout" || fail "--version: $(cat "$WORK/stdout")"
for sub in export import; do
  expect_status 0 "$STEPSCOPE" "$sub" --help
done

# No subcommand, an unknown one, a bad format: usage errors (status 2), not crashes.
expect_status 2 "$STEPSCOPE"
expect_status 2 "$STEPSCOPE" no-such-command
echo '[]' > "$WORK/empty.json"
expect_status 2 "$STEPSCOPE" export "$WORK/empty.json" --format png -o "$WORK/x"

# Bad inputs: exit status 2 and a message naming the file.
expect_status 2 "$STEPSCOPE" export "$WORK/missing.db" --format collapsed
expect_stderr_contains "missing.db"
printf 'SQLite format 3\0garbage' > "$WORK/fake.db"
expect_status 2 "$STEPSCOPE" export "$WORK/fake.db" --format collapsed
expect_stderr_contains "fake.db"
printf '{"traceEvents": [{"ph": "X", "ts": 1, "dur": 2, "pid": 1, "tid": 1, "name": "a"}, {"ph": ' > "$WORK/truncated.json"
expect_status 2 "$STEPSCOPE" export "$WORK/truncated.json" --format collapsed
expect_stderr_contains "truncated.json"
[ ! -e "$WORK/x" ] || fail "a failed export left an output file"
echo "1 passed, 0 failed"
