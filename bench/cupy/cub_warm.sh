#!/usr/bin/env bash
# CuPy's cold and warm paths on the CUB kernel, each a new process, on the
# GPU machine: bash bench/cupy/cub_warm.sh [ROUNDS [FILE.cu...]]
# With files (kernels k(int* d), as deps/testdata/cccl holds), each of them
# instead, each in a cache of its own.
set -euo pipefail
dir=$(mktemp -d)
printf '#define MINE 1\n' >"$dir/mine.h"
rounds=${1:-5}
shift || true
py="$(dirname "$0")/cub_warm.py"
if [ $# -eq 0 ]; then
  export CUPY_CACHE_DIR="$dir/cupy-cache"
  echo "cold $(python3 "$py" "$dir")"
  for _ in $(seq "$rounds"); do echo "warm $(python3 "$py" "$dir")"; done
  exit
fi
for f in "$@"; do
  export CUPY_CACHE_DIR="$dir/cupy-$(basename "$f" .cu)"
  echo "$(basename "$f" .cu) cold $(python3 "$py" "$dir" "$f" 2>&1 | tail -1)"
  for _ in $(seq "$rounds"); do echo "$(basename "$f" .cu) warm $(python3 "$py" "$dir" "$f" 2>&1 | tail -1)"; done
done
