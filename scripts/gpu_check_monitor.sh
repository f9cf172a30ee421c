#!/usr/bin/env bash
# Device check for `stepscope monitor` on a machine with an NVIDIA GPU: builds,
# samples the idle GPU, then runs `monitor --count 5 --format jsonl` while a
# PyTorch matrix-multiply loop keeps GPU 0 busy, and checks that utilization
# and memory rise and that the loop's process is seen. Exits non-zero with a
# message on the first failed check. Usage: scripts/gpu_check_monitor.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-gpu-check}
out=$(mktemp -d "${TMPDIR:-/tmp}/stepscope-gpu.XXXXXX")
loop_pid=
cleanup() { [ -n "$loop_pid" ] && kill "$loop_pid" 2>/dev/null; rm -rf "$out"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

python=python3
[ -x .venv/bin/python ] && python=.venv/bin/python
"$python" -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null \
  || fail "$python has no CUDA-enabled torch (run scripts/setup)"

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > "$out/cmake.log" \
  || { cat "$out/cmake.log"; fail "cmake"; }
cmake --build "$build" --target stepscope -j"$(nproc)" > "$out/build.log" \
  || { tail -50 "$out/build.log"; fail "build"; }
stepscope=$build/stepscope

# Before: the GPU section exists (NVML loaded) and shows the idle state.
"$stepscope" monitor --interval 0.5 --count 1 --format jsonl --verbose > "$out/idle.jsonl"
"$python" - "$out/idle.jsonl" <<'PYEOF' || fail "no GPU section while idle: $(cat "$out/idle.jsonl")"
import json, sys
s = json.loads(open(sys.argv[1]).readline())
assert s["gpus"], "gpus is empty"
g = s["gpus"][0]
print(f"idle: {g['name']} util {g['util_percent']}% memory {g['memory_used_bytes']} / {g['memory_total_bytes']}")
PYEOF

# The load: 8192^2 matmuls on GPU 0 for up to a minute, with 4 GiB held.
"$python" -c '
import time, torch
hold = torch.empty(4 << 30, dtype=torch.uint8, device="cuda")
a = torch.randn(8192, 8192, device="cuda"); b = torch.randn(8192, 8192, device="cuda")
end = time.monotonic() + 60
while time.monotonic() < end:
    for _ in range(20): c = a @ b
    torch.cuda.synchronize()' &
loop_pid=$!
sleep 8  # CUDA context creation and the first kernels
kill -0 "$loop_pid" || fail "the matmul loop died"

"$stepscope" monitor --pid "$loop_pid" --interval 1 --count 5 --format jsonl > "$out/busy.jsonl"
cat "$out/busy.jsonl"
"$python" - "$out/idle.jsonl" "$out/busy.jsonl" "$loop_pid" <<'PYEOF' || fail "GPU counters did not rise"
import json, sys
idle = json.loads(open(sys.argv[1]).readline())["gpus"][0]
busy = [json.loads(line) for line in open(sys.argv[2])]
pid = int(sys.argv[3])
assert len(busy) == 5, f"{len(busy)} samples, expected 5"
gpus = [s["gpus"][0] for s in busy]
util = max(g["util_percent"] or 0 for g in gpus)
memory = max(g["memory_used_bytes"] or 0 for g in gpus)
assert util >= 50, f"utilization peaked at {util}%"
assert memory >= idle["memory_used_bytes"] + (4 << 30), f"memory {memory} vs idle {idle['memory_used_bytes']}"
for key in ("sm_clock_mhz", "power_watts", "temperature_c"):
    assert any(g[key] for g in gpus), f"{key} never reported"
procs = [p for g in gpus for p in g["processes"]]
if not any(p["pid"] == pid for p in procs):
    # In a container NVML reports host pids: not a failure of stepscope.
    print(f"note: pid {pid} not among NVML's processes {sorted({p['pid'] for p in procs})}")
tree = [p for s in busy for p in s["processes"] if p["pid"] == pid]
assert tree and max(p["cpu_percent"] or 0 for p in tree) > 0, "the loop's process is missing"
print(f"busy: util {util}% memory {memory} bytes: ok")
PYEOF
echo "gpu_check_monitor: ok"
