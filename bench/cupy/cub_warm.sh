#!/usr/bin/env bash
# CuPy's cold and warm paths on the CUB kernel, each a new process, on the
# GPU machine: bash bench/cupy/cub_warm.sh [ROUNDS]
set -euo pipefail
dir=$(mktemp -d)
printf '#define MINE 1\n' >"$dir/mine.h"
export CUPY_CACHE_DIR="$dir/cupy-cache"
echo "cold $(python3 "$(dirname "$0")/cub_warm.py" "$dir")"
for _ in $(seq "${1:-5}"); do echo "warm $(python3 "$(dirname "$0")/cub_warm.py" "$dir")"; done
