# Step anatomy on Debian's PyTorch 1.13 (python3-torch), which has no global
# optimizer hooks: the hooks' fallback wraps each optimizer's step.
source "$(dirname "$0")/lib.sh"
check="$STEPSCOPE_REPO/tests/integration/check_steps.py"
python=/usr/bin/python3
if ! version=$("$python" -c 'import torch; print(torch.__version__)' 2>/dev/null); then
  echo "skipped: Debian's python3-torch is not installed"
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
fi
echo "torch $version"

expect_status 0 "$STEPSCOPE" record -o "$WORK/steps.db" -- \
  "$python" "$STEPSCOPE_REPO/tests/integration/programs/slow_dataset.py" --num-workers 0 --steps 8
[ "$("$PY" "$check" "$WORK/steps.db" count)" = 8 ] || fail "expected 8 steps: $(cat "$WORK/stderr")"
kinds=$("$PY" "$check" "$WORK/steps.db" kinds)
"$PY" - "$kinds" <<'PYEOF' || fail "missing phases: $kinds"
import json, sys
kinds = json.loads(sys.argv[1])
# 2 data_wait, 3 forward, 4 backward, 5 optimizer: eight of each, one per step.
sys.exit(0 if all(kinds.get(str(k), 0) >= 8 for k in (2, 3, 4, 5)) else 1)
PYEOF
expect_status 0 "$STEPSCOPE" report "$WORK/steps.db" --json
"$PY" -c 'import json, sys; s = json.load(open(sys.argv[1]))["steps"]; sys.exit(0 if s["count"] == 8 else 1)' \
  "$WORK/stdout" || fail "report does not show 8 steps"
echo "1 passed, 0 failed"
