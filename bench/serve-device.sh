#!/bin/bash
# Device run for issue 22 (compile server): the tests and the benchmark of
# bench/RESULTS-cuda.md, "Compile server (issue 22)". Put cuda.test,
# compileserver.test and kcache (built as that section says) beside it.
# Every client is a new process (cuda.test -test.run TestServeBenchClient)
# that builds a kernel it never saw through cuda.Cache on an empty cache:
# the key, the request to the server (or NVRTC here), the store, the launch.
# PHASES and FAMS choose what runs.
B=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
exec > >(tee $OUT/run.log) 2>&1
export XDG_RUNTIME_DIR=$(mktemp -d /tmp/kcsrt.XXXX); chmod 700 $XDG_RUNTIME_DIR
cd $B
HDR=$(mktemp -d /tmp/kchdr.XXXX); echo '#define VALUE 1' > $HDR/value.cuh; touch -d '1 hour ago' $HDR/value.cuh
export KCACHE_SERVE_BENCH_HDR=$HDR
FAMS=${FAMS:-"block1 block4 device thrust libcu"}
PHASES=${PHASES:-"tests families eight"}
LOG=$XDG_RUNTIME_DIR/kcache/serve.sock.log
nproc; nvidia-smi --query-gpu=name --format=csv,noheader

client() { # family idx label
  local d=$(mktemp -d /tmp/kcb.XXXX) t0=$(date +%s%N)
  local out=$(KCACHE_SERVE_BENCH_FAMILY=$1 KCACHE_SERVE_BENCH=$2 KCACHE_SERVE_BENCH_DIR=$d timeout 90 ./cuda.test -test.run '^TestServeBenchClient$' -test.count=1 2>&1)
  local t1=$(date +%s%N)
  local line=$(echo "$out" | grep BENCH | tr "\n" " ")
  [ -z "$line" ] || echo "$out" | grep -q '^ok\|^PASS' || line="$line FAILED $(echo "$out" | grep -v BENCH | tail -4 | tr '\n' ' ' | cut -c1-400)"
  [ -z "$line" ] && line="FAILED $(echo "$out" | tail -6 | tr '\n' ' ' | cut -c1-600)"
  echo "$3 family=$1 process_ms=$(( (t1-t0)/1000000 )) $line"
  rm -rf $d
}
idle() { # wait until the server compiled $1 (default 1) and no worker is busy (warm-ups)
  for _ in $(seq 300); do
    local j=$($B/kcache serve --json)
    echo "$j" | grep -q '"busy":true' || [ "$(echo "$j" | grep -o '"compiled":[0-9]*' | cut -d: -f2)" -lt ${1:-1} ] 2>/dev/null || return
    sleep 0.1
  done
}
stop() { $B/kcache serve --stop 2>/dev/null; for _ in $(seq 50); do [ -S $XDG_RUNTIME_DIR/kcache/serve.sock ] || break; sleep 0.1; done; sleep 0.3; }
many() { # label family first-idx: 8 clients at once
  local pids= t0=$(date +%s%N)
  for i in $(seq $3 $(( $3 + 7 ))); do client $2 $i $1 & pids="$pids $!"; done; wait $pids
  echo "$1 total_ms=$(( ($(date +%s%N)-t0)/1000000 ))"
}

if [[ $PHASES == *tests* ]]; then
  echo "== tests"
  timeout 90 ./compileserver.test -test.count=1 2>&1 | tail -3
  timeout 150 ./cuda.test -test.run 'TestServe' -test.v -test.count=1 2>&1 | grep -E "^(---|ok|PASS|FAIL)|serve.*go:" | tail -20
fi

if [[ $PHASES == *families* ]]; then
  echo "== families: the key alone, then NVRTC in the client"
  unset KCACHE_SERVE
  for f in $FAMS; do
    KCACHE_SERVE_BENCH_KEYONLY=1 client $f 0 key
    for i in 1 2 3; do client $f $i plain; done
  done
  echo "== families through the server: the first kernel starts it (cold), then 4 new kernels (warm)"
  export KCACHE_SERVE=$B/kcache
  for f in $FAMS; do
    stop
    client $f 10 cold-server   # compiles itself; the server it starts compiles the same as a warm-up
    idle
    for i in 11 12 13 14; do client $f $i warm-server; done
    idle; $B/kcache serve --json
  done
  stop
  echo "-- KCACHE_SERVE=connect with no server: falls back"
  KCACHE_SERVE=connect client block4 15 connect-none
fi

if [[ $PHASES == *eight* ]]; then
  echo "== 8 clients at once, 8 new block4 kernels"
  unset KCACHE_SERVE
  many plain8 block4 20
  export KCACHE_SERVE=$B/kcache
  stop
  client block4 30 eight-warmup; idle
  many warm8 block4 31
  idle; $B/kcache serve --json
  stop
  many cold8 block4 40
  idle; $B/kcache serve --json
  stop
fi
echo "== server log"
grep -iE "pch|worker|warn|error" $LOG | cut -c1-300 | head -40
ls -d /tmp/__nvrtc_auto_pch_* 2>/dev/null | head
