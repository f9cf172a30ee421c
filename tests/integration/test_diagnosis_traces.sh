# The copy and memory rules on every real input we have: the testdata traces
# (no false alarms) and what was captured on an H200 (tests/data/gpu: the
# firing side, traces and recorded runs), each against numbers counted from
# the raw input (check_copy_memory_rules.py says how).
source "$(dirname "$0")/lib.sh"
need_kineto
kineto=$KINETO
"$PY" "$(dirname "$0")/check_copy_memory_rules.py" "$STEPSCOPE" "$kineto" "$STEPSCOPE_REPO/tests/data/gpu" "$WORK" \
  || fail "copy and memory rules on the real inputs"
echo "1 passed, 0 failed"
