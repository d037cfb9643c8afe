#!/usr/bin/env bash
# The device check of the execution seam and its passes, as one script for a GPU machine (about 8 minutes on an
# H100 or H200): the CUDA-only tests (pass sizing against torch.cuda.max_memory_allocated, batched bi-encoder scoring,
# what a step waits for), then benchmarks/gpu_throughput.py at paper shapes with the jobs' own passes (writing
# benchmarks/calibration.json), with the released code's micro-batches of 2 for the rankers, and compiled.
# PYTHON: an interpreter with this project's requirements and a CUDA build of torch (default: python).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python}
export PYTHONPATH=src${PYTHONPATH:+:$PYTHONPATH}
"$PYTHON" -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; print(torch.cuda.get_device_name())"
"$PYTHON" -m pytest -q -p no:cacheprovider tests/test_execution.py tests/test_passes.py tests/test_training.py \
    tests/test_rankers.py tests/test_precision.py
"$PYTHON" benchmarks/gpu_throughput.py --steps 8 --write
"$PYTHON" benchmarks/gpu_throughput.py --steps 8 --passes 2 --only rankers
"$PYTHON" benchmarks/gpu_throughput.py --steps 8 --compile --only rankers condenser
