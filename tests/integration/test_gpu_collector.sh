# The GPU collector without a GPU: the injected library's exports and its
# silence when loaded where it cannot work; `record --gpu` choices; and the
# recorder reading activity files (written by a stand-in program that
# implements the documented format independently), including a process
# killed mid-write and correlation ids that repeat across processes.
source "$(dirname "$0")/lib.sh"
programs="$STEPSCOPE_REPO/tests/integration/programs"
export STEPSCOPE_PYTHON_DIR="$STEPSCOPE_REPO/python"
library="$(dirname "$STEPSCOPE")/libstepscope-cupti.so"
# The runs' tables through tools/run_samples.py, the run format's reference decoder.
sql() { run_sql "$1" "$2"; }

if [ -f "$library" ]; then
  # Only the two entry points CUDA and NVTX look up, and the hand-over to
  # torch.profiler, are exported.
  exports=$(nm -D --defined-only "$library" | awk '{print $3}' | sort | tr '\n' ' ')
  [ "$exports" = "InitializeInjection InitializeInjectionNvtx2 stepscope_release_cupti " ] || fail "library exports: $exports"

  # Loaded outside `record`, it does nothing and says nothing.
  load='import ctypes,sys; print(ctypes.CDLL(sys.argv[1]).InitializeInjection())'
  env -u STEPSCOPE_GPU_DIR python3 -c "$load" "$library" >"$WORK/out" 2>"$WORK/err" || fail "loading the library failed"
  [ "$(cat "$WORK/out")" = 1 ] && [ ! -s "$WORK/err" ] || fail "outside record: $(cat "$WORK/out" "$WORK/err")"
  nvtx='import ctypes,sys; print(ctypes.CDLL(sys.argv[1]).InitializeInjectionNvtx2(None))'
  release='import ctypes,sys; print(ctypes.CDLL(sys.argv[1]).stepscope_release_cupti(b"torch.profiler"))'
  env -u STEPSCOPE_GPU_DIR python3 -c "$release" "$library" >"$WORK/out" 2>"$WORK/err" || fail "the hand-over crashed"
  [ "$(cat "$WORK/out")" = 0 ] && [ ! -s "$WORK/err" ] || fail "hand-over holding nothing: $(cat "$WORK/out" "$WORK/err")"
  env -u STEPSCOPE_GPU_DIR python3 -c "$nvtx" "$library" >"$WORK/out" 2>"$WORK/err" || fail "NVTX entry crashed"
  [ "$(cat "$WORK/out")" = 0 ] && [ ! -s "$WORK/err" ] || fail "NVTX entry outside record: $(cat "$WORK/out" "$WORK/err")"

  # Under `record` but with no GPU (no libcupti, or libcupti without a
  # driver): no crash, no output; the reason lands in its file as a note.
  mkdir "$WORK/gpu"
  libcupti=$(ls "$STEPSCOPE_REPO"/.venv/lib/python3*/site-packages/nvidia/cu13/lib/libcupti.so.13 2>/dev/null | head -n 1 || true)
  for cupti in /nonexistent/libcupti.so.13 $libcupti; do
    rm -f "$WORK"/gpu/*
    STEPSCOPE_GPU_DIR="$WORK/gpu" STEPSCOPE_LIBCUPTI="$cupti" python3 -c "$load" "$library" \
      >"$WORK/out" 2>"$WORK/err" || fail "loading the library with $cupti crashed"
    [ "$(cat "$WORK/out")" = 1 ] && [ ! -s "$WORK/err" ] || fail "with $cupti: $(cat "$WORK/out" "$WORK/err")"
    head -c 8 "$WORK"/gpu/*.gpu | grep -q SSGPU1 || fail "with $cupti: no activity file header"
    case $cupti in
      /nonexistent/*) grep -aq "no libcupti found" "$WORK"/gpu/*.gpu || fail "no note on the missing libcupti" ;;
    esac
  done

  # torch.profiler asked for CUPTI before CUDA started (the Python hook set
  # STEPSCOPE_GPU_YIELD): the library leaves CUPTI alone and says so.
  rm -f "$WORK"/gpu/*
  STEPSCOPE_GPU_DIR="$WORK/gpu" STEPSCOPE_GPU_YIELD=torch.profiler python3 -c "$load" "$library" \
    >"$WORK/out" 2>"$WORK/err" || fail "loading the library after a yield crashed"
  [ "$(cat "$WORK/out")" = 1 ] && [ ! -s "$WORK/err" ] || fail "after a yield: $(cat "$WORK/out" "$WORK/err")"
  grep -aq "CUPTI left to torch.profiler, which asked for it first" "$WORK"/gpu/*.gpu || fail "no note on the yield"

  # The Python side of the hand-over (python/stepscope/_cupti.py): with the
  # library not loaded yet it marks the environment for the profiler's own
  # start of CUDA, and undoes that; with it loaded it calls the library (which
  # holds nothing here) and leaves the environment alone.
  PYTHONPATH="$STEPSCOPE_REPO/python" CUDA_INJECTION64_PATH="$library" STEPSCOPE_GPU_DIR="$WORK/gpu" python3 - <<'PYEOF' \
    || fail "the Python hand-over"
import ctypes, os, types
from stepscope import _cupti
torch = types.SimpleNamespace(cuda=types.SimpleNamespace(is_initialized=lambda: False))
activity = lambda name: types.SimpleNamespace(name=name)
assert _cupti.wants_device([activity("CPU"), activity("CUDA")]) and not _cupti.wants_device([activity("CPU")])
undo = _cupti.hand_over(torch)
assert os.environ.get("STEPSCOPE_GPU_YIELD") == "torch.profiler" and undo is not None
undo()
assert "STEPSCOPE_GPU_YIELD" not in os.environ
ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"])
assert _cupti.hand_over(torch) is None and "STEPSCOPE_GPU_YIELD" not in os.environ
PYEOF
else
  echo "note: $library not built (no CUPTI headers); library checks skipped"
fi

# --gpu off: nothing is injected, and the run says so.
expect_status 0 "$STEPSCOPE" record --gpu off -o "$WORK/off.db" -- python3 -c \
  'import os; print(os.environ.get("CUDA_INJECTION64_PATH"), os.environ.get("STEPSCOPE_GPU_DIR"))'
[ "$(cat "$WORK/stdout")" = "None None" ] || fail "--gpu off injected: $(cat "$WORK/stdout")"
[ "$(sql "$WORK/off.db" "SELECT value FROM metadata WHERE key = 'gpu'")" = "off: --gpu off" ] || fail "gpu metadata for off"

expect_status 2 "$STEPSCOPE" record --gpu maybe -o "$WORK/bad.db" -- true
expect_stderr_contains "--gpu"

[ -f "$library" ] || exit 0

# --gpu on with a program that never touches CUDA: the recording is kept,
# and one line says why it has no GPU activity.
expect_status 0 "$STEPSCOPE" record --gpu on -o "$WORK/on.db" -- python3 -c 'print("no cuda here")'
expect_stderr_contains "--gpu on: no GPU activity recorded: "
[ "$(sql "$WORK/on.db" "SELECT value FROM metadata WHERE key = 'gpu'")" = on ] || fail "gpu metadata for on"

# torch.profiler with CUDA activity in a recorded program (torch's CPU build
# here: no CUDA starts): the hook is in, the profiler works as without
# stepscope, and nothing is left in the environment.
if "$PY" -c 'import torch' 2>/dev/null; then
  cat > "$WORK/profiled.py" <<'PYEOF'
import os, torch
import torch.autograd.profiler as autograd_profiler
from torch.profiler import ProfilerActivity, profile
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    x = torch.randn(64, 64)
    for _ in range(5):
        x = x @ x
matmuls = sum(1 for e in prof.events() if e.name == "aten::matmul")
print(hasattr(autograd_profiler._prepare_profiler, "__wrapped__"), matmuls, "STEPSCOPE_GPU_YIELD" in os.environ)
PYEOF
  expect_status 0 "$STEPSCOPE" record --gpu on -o "$WORK/profiled.db" -- "$PY" "$WORK/profiled.py"
  [ "$(cat "$WORK/stdout")" = "True 5 False" ] || fail "torch.profiler under record: $(cat "$WORK/stdout")"
  ! grep -q "hook profiler disabled" "$WORK/stderr" || fail "the profiler hook failed: $(cat "$WORK/stderr")"
fi

# Activity files from two processes, the parent killed mid-record.
expect_status 137 "$STEPSCOPE" record --gpu on -o "$WORK/fake.db" -- python3 "$programs/fake_cuda_activity.py" --killed
expect_stderr_contains "GPU activity files ended in 20 bytes of an unfinished record"
kernel_kind=9; memcpy_kind=10; runtime_kind=8; range_kind=6
count() { sql "$WORK/fake.db" "SELECT count(*) FROM spans s JOIN strings n ON n.id = s.name WHERE $1"; }
[ "$(count "s.kind = $kernel_kind AND n.value = 'fake_kernel' AND s.pid = 0 AND s.tid = 7 AND s.end_ns - s.start_ns = 20000")" = 2 ] \
  || fail "kernels: $(sql "$WORK/fake.db" "SELECT * FROM spans")"
[ "$(count "s.kind = $memcpy_kind AND n.value = 'Memcpy HtoD (Pageable -> Device)' AND s.bytes = 4096")" = 2 ] || fail "copies"
[ "$(sql "$WORK/fake.db" "SELECT count(*) FROM spans s JOIN strings d ON d.id = s.detail WHERE d.value = 'HtoD Pageable'")" = 2 ] \
  || fail "copy detail"
[ "$(count "s.kind = $runtime_kind AND n.value = 'cudaLaunchKernel' AND s.pid = s.tid")" = 2 ] || fail "launches"
[ "$(count "s.kind = $range_kind AND n.value = 'fake_range' AND s.end_ns - s.start_ns = 70000")" = 2 ] || fail "NVTX ranges"
# Each launch flows to its own process's kernel, though both used correlation 1.
[ "$(sql "$WORK/fake.db" "SELECT count(*) FROM flows f JOIN strings k ON k.id = f.kind
      JOIN spans a ON a.id = f.from_span JOIN spans b ON b.id = f.to_span
      WHERE k.value = 'ac2g' AND a.correlation = b.correlation AND (a.correlation >> 32) = a.pid")" = 4 ] \
  || fail "flows: $(sql "$WORK/fake.db" "SELECT * FROM flows")"
[ "$(sql "$WORK/fake.db" "SELECT count(DISTINCT correlation) FROM spans WHERE kind = $kernel_kind")" = 2 ] || fail "correlations collide"
[ "$(sql "$WORK/fake.db" "SELECT value FROM metadata WHERE key = 'gpu_truncated_bytes'")" = 20 ] || fail "truncated tail not counted"
[ "$(sql "$WORK/fake.db" "SELECT value FROM metadata WHERE key = 'gpu_processes'")" = 2 ] || fail "not two GPU processes"
# The device track is named as imported traces name it, and the run's other tools read it.
[ "$(sql "$WORK/fake.db" "SELECT n.value FROM threads t JOIN strings n ON n.id = t.name WHERE t.pid = 0 AND t.tid = 7")" = "stream 7" ] \
  || fail "stream track name"
expect_status 0 "$STEPSCOPE" report "$WORK/fake.db"
# The Perfetto export draws recorded GPU activity as it draws imported traces'.
expect_status 0 "$STEPSCOPE" export "$WORK/fake.db" --format perfetto -o "$WORK/fake.json"
"$PY" - "$WORK/fake.json" <<'PYEOF' || fail "perfetto export of GPU activity"
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
kernels = [e for e in events if e.get("cat") == "kernel" and e["name"] == "fake_kernel"]
assert len(kernels) == 2 and all(e["pid"] == 0 and e["tid"] == 7 and e["dur"] == 20.0 for e in kernels), kernels
flows = [e for e in events if e.get("cat") == "ac2g"]
assert len(flows) == 8, flows  # a start and a finish for each launch and copy call
PYEOF
