# The operator table of `report` against torch's own key_averages() on the
# same profile: PyTorch 2.x (Kineto trace; plain, and with record_shapes and
# with_stack, whose Python function events nest untidily and give negative
# self times that torch keeps), Debian's 1.13 (legacy autograd export), and a
# CUDA profile torch 2.11 made on an H200 (device times; tests/data/gpu).
source "$(dirname "$0")/lib.sh"
program="$STEPSCOPE_REPO/tests/integration/programs/torch_ops_trace.py"
check="$STEPSCOPE_REPO/tests/integration/check_ops_torch.py"
passed=0 skipped=0

compare() {  # compare NAME PYTHON [--shapes] [--stack]
  local name=$1 python=$2; shift 2
  "$python" "$program" "$WORK/$name.json" "$WORK/$name.torch.json" "$@" >/dev/null 2>"$WORK/$name.err" ||
    fail "$name: profiling failed: $(tail -5 "$WORK/$name.err")"
  expect_status 0 "$STEPSCOPE" report "$WORK/$name.json" --json -o "$WORK/$name.ops.json"
  "$PY" "$check" "$WORK/$name.torch.json" "$WORK/$name.ops.json" || fail "$name: ops differ from torch's"
  passed=$((passed + 1))
  if [ "${1:-}" = --shapes ]; then
    expect_status 0 "$STEPSCOPE" report "$WORK/$name.json" --json --ops-by-shapes -o "$WORK/$name.shapes.json"
    local legacy=
    # The legacy export writes no shapes: only the totals by name can match.
    grep -q '"Input [Dd]ims"' "$WORK/$name.json" || legacy=1
    if [ -z "$legacy" ]; then
      "$PY" "$check" "$WORK/$name.torch.json" "$WORK/$name.shapes.json" --shapes ||
        fail "$name: ops by input shapes differ from torch's"
      passed=$((passed + 1))
    fi
  fi
}

compare kineto "$PY"
# A GPU profile made once on an H200 (tests/data/gpu): device times too.
gpu="$STEPSCOPE_REPO/tests/data/gpu"
expect_status 0 "$STEPSCOPE" report "$gpu/ops-cuda.trace.json.gz" --json -o "$WORK/cuda.ops.json"
"$PY" "$check" "$gpu/ops-cuda.key_averages.json" "$WORK/cuda.ops.json" || fail "cuda: ops differ from torch's"
passed=$((passed + 1))
# A run recorded before the GPU collector demangled kernel names: read, they are named as
# Kineto names them (`void at::native::...`), none left mangled.
gunzip -c "$gpu/torch-loop.db.gz" > "$WORK/torch-loop.db"
expect_status 0 "$STEPSCOPE" report "$WORK/torch-loop.db" --json -o "$WORK/recorded.ops.json"
"$PY" - "$WORK/recorded.ops.json" <<'PYEOF' || fail "recorded kernels keep mangled names"
import json, sys
names = [op["name"] for op in json.load(open(sys.argv[1]))["ops"] if op["kind"] == "device"]
assert not [n for n in names if n.startswith("_Z")], [n for n in names if n.startswith("_Z")][:3]
assert any(n.startswith("void at::native::reduce_kernel<") for n in names), names[:10]
PYEOF
passed=$((passed + 1))
compare kineto_shapes_stack "$PY" --shapes --stack
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  compare legacy /usr/bin/python3 --shapes
else
  echo "skipped: Debian's python3-torch is not installed"
  skipped=1
fi

# The text table shows the same rows.
expect_status 0 "$STEPSCOPE" report "$WORK/kineto.json" --top 5
grep -q "Operators (torch key_averages semantics" "$WORK/stdout" || fail "no operator table: $(cat "$WORK/stdout")"
grep -q "Self CPU time total" "$WORK/stdout" || fail "no self CPU total"
echo "$passed passed, 0 failed, $skipped skipped"
