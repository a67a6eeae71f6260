#!/usr/bin/env bash
# Issue 18's GPU checks in one call on a machine with a CUDA GPU (see benchmarks/README.md):
# the whole test suite with CUDA present (device "auto" trains on the GPU), then the GPU
# benchmarks: curve_speed.py (matmul peak, the default chunk budget and probes per chunk,
# GFLOP/s against the peak, the plain loop), gpu_chunks.py (the chunk plans of the CPU's and the
# GPU's cost model, timed alternately), a torch.profiler summary of the online code, and
# paper_scale.py (the online code at a million tokens, the converged Fashion-MNIST curve).
# Each step runs under its own time limit, writes its log (and JSON) under OUT and prints its
# last lines, so that a step that hangs costs only its limit.
#
#   bash benchmarks/gpu_checks.sh [OUT]        # OUT defaults to ./gpu-checks
#
# Environment: PYTHON (default python3), WORKERS (pytest-xdist workers, default 8; 0 runs the
# suite in one process), STEPS (the steps to run, by name; default all: machine suite
# curve_speed gpu_chunks profile paper_scale).
set -u
out=${1:-gpu-checks}
mkdir -p "$out"
python=${PYTHON:-python3}
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"

steps=" ${STEPS:-machine suite curve_speed gpu_chunks profile paper_scale} "

step() { # step NAME SECONDS COMMAND...: the command under a limit, logged to OUT/NAME.log
    local name=$1 limit=$2 start=$SECONDS
    shift 2
    [[ $steps == *" $name "* ]] || return 0
    echo "== $name (limit $limit s)"
    timeout "$limit" "$@" >"$out/$name.log" 2>&1
    echo "   exit $? after $((SECONDS - start)) s"
    tail -n "${TAIL:-14}" "$out/$name.log"
}

options=() # pytest-xdist and pytest-timeout where installed (the GPU image has both)
if [ "${WORKERS:-8}" != 0 ] && "$python" -c "import xdist" 2>/dev/null; then
    options+=(-n "${WORKERS:-8}")
fi
if "$python" -c "import pytest_timeout" 2>/dev/null; then options+=(--timeout 100); fi

step machine 60 "$python" -c "
import torch
from probemeter.training.memory import memory_budget
print('torch', torch.__version__, 'CUDA', torch.version.cuda, 'available', torch.cuda.is_available())
gpu = torch.device('cuda')
free, total = torch.cuda.mem_get_info(gpu)
print(torch.cuda.get_device_name(gpu), f'free {free / 2**30:.1f} of {total / 2**30:.1f} GiB')
print(f'default chunk budget {memory_budget(None, gpu):.1f} GiB')
"
step suite 150 "$python" -m pytest -q -p no:cacheprovider "${options[@]}" tests
step curve_speed 120 "$python" benchmarks/curve_speed.py --device cuda \
    --cases reference fashion-mnist --loop-probes 4 --no-in-process --json "$out/curve_speed.json"
step gpu_chunks 120 "$python" benchmarks/gpu_chunks.py
# 10 000 tokens: at 100 000 the profiler's summary of the CUDA events took over 40 s
step profile 60 "$python" benchmarks/paper_scale.py --device cuda --cases online --tokens 10000 \
    --profile
step paper_scale 230 "$python" benchmarks/paper_scale.py --device cuda --precisions f32 bf16 \
    --json "$out/paper_scale.json"
