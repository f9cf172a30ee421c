#!/usr/bin/env bash
# Captures, on a machine with an NVIDIA GPU, the real inputs that
# tests/data/gpu/ holds for the suite (which runs without a GPU):
#   small-copies.trace.json.gz    torch.profiler trace, 80 small pageable copies a step
#   batched-copies.trace.json.gz  the same data in one pinned copy each way
#   memory-93.trace.json.gz       93% of the GPU's memory held (profile_memory)
#   memory-30.trace.json.gz       30% held
#   torch-loop.db.gz              `record --gpu on` of scripts/gpu_check/torch_loop.py
#   small-copies.db.gz            `record --gpu on` of the small copies
#   memory-93.db.gz               `record --gpu off` of 93% held (NVML counters)
#   example-w0.db.gz, example-w2.db.gz
#                                 `record` of examples/train_lm.py --device cuda with 0
#                                 DataLoader workers, and with 2 and pin_memory
#   ops-cuda.trace.json.gz, ops-cuda.key_averages.json
#                                 tests/integration/programs/torch_ops_trace.py --cuda:
#                                 a trace and torch's own key_averages() of it
#   versions.txt                  torch, CUDA, the GPU and its driver
# Usage: scripts/gpu_check/capture_testdata.sh OUTDIR (binaries as in
# scripts/device-check-gpu: .gpu-pack/ or build/). Writes them all in one
# OUTDIR/gpu-testdata.tar (the device tool brings back 8 files at most):
# `tar -xf gpu-testdata.tar -C tests/data/gpu` puts them in place.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:?usage: capture_testdata.sh OUTDIR}
mkdir -p "$out"
if [ -x .gpu-pack/stepscope ]; then
  stepscope=$PWD/.gpu-pack/stepscope
  export LD_LIBRARY_PATH=$PWD/.gpu-pack/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
else
  stepscope=$PWD/build/stepscope
fi
export STEPSCOPE_PYTHON_DIR=$PWD/python PYTHONUNBUFFERED=1
checks=scripts/gpu_check
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 $checks/memcpy_program.py small "$work/small-copies.trace.json"
python3 $checks/memcpy_program.py batched "$work/batched-copies.trace.json"
python3 $checks/memory_program.py 0.93 "$work/memory-93.trace.json"
python3 $checks/memory_program.py 0.30 "$work/memory-30.trace.json"
"$stepscope" record --gpu on -o "$work/torch-loop.db" -- python3 $checks/torch_loop.py 30
"$stepscope" record --gpu on -o "$work/small-copies.db" -- python3 $checks/memcpy_program.py small -
"$stepscope" record --gpu off -o "$work/memory-93.db" -- python3 $checks/memory_program.py 0.93 -
"$stepscope" record -o "$work/example-w0.db" -- python3 examples/train_lm.py --device cuda
"$stepscope" record -o "$work/example-w2.db" -- python3 examples/train_lm.py --device cuda --num-workers 2 --pin-memory
ops=tests/integration/programs/torch_ops_trace.py
mkdir "$work/pack"
python3 $ops "$work/ops-cuda.trace.json" "$work/pack/ops-cuda.key_averages.json" --cuda
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.get_device_name())' \
  > "$work/pack/versions.txt"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >> "$work/pack/versions.txt"
for f in "$work"/*.json "$work"/*.db; do gzip -9 < "$f" > "$work/pack/$(basename "$f").gz"; done
tar -C "$work/pack" -cf "$out/gpu-testdata.tar" .
tar -tvf "$out/gpu-testdata.tar"
