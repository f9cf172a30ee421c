#!/usr/bin/env bash
# The README's loop on a GPU: records examples/train_lm.py on CUDA with 0
# DataLoader workers and with 2 (and pin_memory), reports both, compares them;
# then records it with --torch-trace (torch.profiler inside the recorded
# process: stepscope hands CUPTI over) and reports the profiler's trace.
# Checks: 0 workers is input_bound first with a num_workers remedy and the
# run has GPU activity; 2 workers is not input_bound; compare says step time
# improved; the profiler's trace has kernels. Usage: example_loop.sh STEPSCOPE
# OUTDIR (called by scripts/device-check-gpu; writes example-*.json there).
set -euo pipefail
cd "$(dirname "$0")/../.."
stepscope=$1 out=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
train=(python3 examples/train_lm.py --device cuda --steps 60)
timeout 300 "$stepscope" record -o "$work/w0.db" -- "${train[@]}" > "$work/w0.out" 2> "$work/w0.err"
timeout 300 "$stepscope" record -o "$work/w2.db" -- "${train[@]}" --num-workers 2 --pin-memory > "$work/w2.out" 2> "$work/w2.err"
timeout 300 "$stepscope" record -o "$work/prof.db" -- "${train[@]}" --steps 10 --torch-trace "$work/torch.json" \
  > "$work/prof.out" 2> "$work/prof.err"
for run in w0 w2; do "$stepscope" report "$work/$run.db" --json -o "$out/example-$run.json"; done
"$stepscope" report "$work/torch.json" --json -o "$out/example-trace.json"
"$stepscope" compare "$work/w0.db" "$work/w2.db" --json -o "$out/example-compare.json" || true
grep -h "CUPTI" "$work/prof.err" > "$work/cupti.txt" || true
python3 - "$out" "$work/cupti.txt" <<'PYEOF'
import json, sys
out, cupti = sys.argv[1], open(sys.argv[2]).read()
w0, w2, trace = (json.load(open(f"{out}/example-{n}.json")) for n in ("w0", "w2", "trace"))
cmp = json.load(open(f"{out}/example-compare.json"))
ids = lambda r: [f["id"] for f in r["diagnosis"]]
kernels = lambda r: sum(k["count"] for k in r["gpu"]["ranks"][0]["kernels"]) if r.get("gpu") and r["gpu"].get("ranks") else 0
step = {m["name"]: m for m in cmp["metrics"]}.get("step_time", {})
print("0 workers:", ids(w0), "kernels", kernels(w0))
print("2 workers:", ids(w2), "kernels", kernels(w2))
print("compare step_time:", step.get("verdict"), step.get("change"), "| torch.profiler trace kernels", kernels(trace), "|", cupti.strip())
assert ids(w0) and ids(w0)[0] == "input_bound" and "num_workers" in w0["diagnosis"][0]["recommendation"], ids(w0)
assert "input_bound" not in ids(w2), ids(w2)
assert kernels(w0) > 0 and kernels(w2) > 0 and kernels(trace) > 0
assert step.get("verdict") == "improved", step
assert "CUPTI handed to torch.profiler" in cupti, cupti
PYEOF
