#!/bin/bash
# Device run for issue 22 (compile server): the tests and the benchmark of
# bench/RESULTS-cuda.md, "Compile server (issue 22)". Put cuda.test,
# compileserver.test and kcache (built as that section says) beside it, or
# one such set per subdirectory named in VARIANTS (say "new old": a branch
# and its baseline, timed alternately per family in one run).
# Every client is a new process (cuda.test -test.run TestServeBenchClient)
# that builds a kernel it never saw through cuda.Cache on an empty cache:
# the key, the request to the server (or NVRTC here), the store, the launch.
# PHASES, FAMS, PLAIN and WARM (clients per family) choose what runs;
# phase "ab" times NVRTC options (AB) against the worker's in one process.
B=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
exec > >(tee $OUT/run.log) 2>&1
export XDG_RUNTIME_DIR=$(mktemp -d /tmp/kcsrt.XXXX); chmod 700 $XDG_RUNTIME_DIR
cd $B
HDR=$(mktemp -d /tmp/kchdr.XXXX); echo '#define VALUE 1' > $HDR/value.cuh; touch -d '1 hour ago' $HDR/value.cuh
export KCACHE_SERVE_BENCH_HDR=$HDR
FAMS=${FAMS:-"block1 block4 device thrust libcu"}
PHASES=${PHASES:-"tests families eight"}
VARIANTS=${VARIANTS:-.}
PLAIN=${PLAIN:-3}; WARM=${WARM:-4}
LOG=$XDG_RUNTIME_DIR/kcache/serve.sock.log
V=$B/${VARIANTS%% *} # the variant whose binaries run now
nproc; nvidia-smi --query-gpu=name --format=csv,noheader

client() { # family idx label
  local d=$(mktemp -d /tmp/kcb.XXXX) t0=$(date +%s%N)
  local out=$(KCACHE_SERVE_BENCH_T0=$t0 KCACHE_SERVE_BENCH_FAMILY=$1 KCACHE_SERVE_BENCH=$2 KCACHE_SERVE_BENCH_DIR=$d timeout 90 $V/cuda.test -test.run '^TestServeBenchClient$' -test.count=1 2>&1)
  local t1=$(date +%s%N)
  local line=$(echo "$out" | grep BENCH | tr "\n" " ")
  [ -z "$line" ] || echo "$out" | grep -q '^ok\|^PASS' || line="$line FAILED $(echo "$out" | grep -v BENCH | tail -4 | tr '\n' ' ' | cut -c1-400)"
  [ -z "$line" ] && line="FAILED $(echo "$out" | tail -6 | tr '\n' ' ' | cut -c1-600)"
  echo "$3 family=$1 process_ms=$(( (t1-t0)/1000000 )) $line"
  rm -rf $d
}
idle() { # wait until the server compiled $1 (default 1) and no worker is busy (warm-ups)
  for _ in $(seq 300); do
    local j=$($V/kcache serve --json)
    echo "$j" | grep -q '"busy":true' || [ "$(echo "$j" | grep -o '"compiled":[0-9]*' | cut -d: -f2)" -lt ${1:-1} ] 2>/dev/null || return
    sleep 0.1
  done
}
stop() { $V/kcache serve --stop 2>/dev/null; for _ in $(seq 50); do [ -S $XDG_RUNTIME_DIR/kcache/serve.sock ] || break; sleep 0.1; done; sleep 0.3; }
many() { # label family first-idx: 8 clients at once
  local pids= t0=$(date +%s%N)
  for i in $(seq $3 $(( $3 + 7 ))); do client $2 $i $1 & pids="$pids $!"; done; wait $pids
  echo "$1 total_ms=$(( ($(date +%s%N)-t0)/1000000 ))"
}

if [[ $PHASES == *tests* ]]; then
  echo "== tests"
  [ -x $V/compileserver.test ] && timeout 90 $V/compileserver.test -test.count=1 2>&1 | tail -3
  timeout 150 $V/cuda.test -test.run 'TestServe' -test.v -test.count=1 2>&1 | grep -E "^(---|ok|PASS|FAIL)|serve.*go:" | tail -20
fi

if [[ $PHASES == *phases* ]]; then
  echo "== phases: NVRTC with PCH in one process, no server (TestServePhases)"
  cat /sys/kernel/mm/transparent_hugepage/enabled; df -h /tmp | tail -1
  T=$(mktemp -d /tmp/kctime.XXXX)
  for f in ${PHASE_FAMS:-$FAMS}; do
    KCACHE_SERVE_PHASES=$f KCACHE_SERVE_PHASES_TIME=$T/time-$f.csv timeout 120 $V/cuda.test -test.run '^TestServePhases$' -test.count=1 2>&1 | grep -E "PHASE|FAIL|Error|error" | cut -c1-400
    echo "-- NVRTC -time of $f (a PCH'd compile, then one without PCH)"; cat $T/time-$f.csv 2>/dev/null
  done
  (cd $T && tar czf $OUT/phases.tgz .)
  echo "-- the server's check of a CCCL-sized key, in parallel chunks and one file after another"
  $V/compileserver.test -test.run '^$' -test.bench CheckSince -test.benchtime 300x -test.count 3 2>&1 | grep Benchmark
fi

if [[ $PHASES == *ab* ]]; then
  echo "== ab: NVRTC with PCH in one process, new kernels with and without AB=\"${AB:=-no-cache}\" alternately (TestServePhases)"
  du -sk ~/.nv/ComputeCache 2>/dev/null
  b=${AB_BASE:-2000}
  for f in ${AB_FAMS:-$FAMS}; do
    KCACHE_SERVE_PHASES=$f KCACHE_SERVE_PHASES_AB="$AB" KCACHE_SERVE_PHASES_BASE=$b timeout 120 $V/cuda.test -test.run '^TestServePhases$' -test.count=1 2>&1 | grep -E "PHASE|FAIL|Error|error" | cut -c1-400
    b=$((b+100))
  done
  du -sk ~/.nv/ComputeCache 2>/dev/null
fi

if [[ $PHASES == *families* ]]; then
  echo "== families: the key alone, then NVRTC in the client"
  unset KCACHE_SERVE
  export KCACHE_DEBUG=1 # the server's log says where each compile's time went
  for f in $FAMS; do
    KCACHE_SERVE_BENCH_KEYONLY=1 client $f 0 key
    for i in $(seq $PLAIN); do client $f $((910+i)) plain; done # block4: the tiles of the warm kernels
  done
  echo "== families through the server, each variant in turn: the first kernel starts it (cold), then $WARM new kernels (warm)"
  order=$VARIANTS
  for f in $FAMS; do
    n=110 # kernel 100s+10 is the cold one of a variant, then 100s+11.. (block4: the same tiles per variant)
    for v in $order; do
      V=$B/$v; export KCACHE_SERVE=$V/kcache
      stop
      client $f $n cold-server-$v   # compiles itself; the server it starts compiles the same as a warm-up
      idle
      for i in $(seq $WARM); do client $f $((n+i)) warm-server-$v; done
      idle; $V/kcache serve --json
      n=$((n+100))
    done
    order=$(echo $order | tr ' ' '\n' | tac | tr '\n' ' ') # the next family takes the variants the other way round
  done
  stop
  echo "-- KCACHE_SERVE=connect with no server: falls back"
  KCACHE_SERVE=connect client block4 9 connect-none
  V=$B/${VARIANTS%% *}
fi

if [[ $PHASES == *eight* ]]; then
  echo "== 8 clients at once, 8 new block4 kernels"
  unset KCACHE_SERVE
  many plain8 block4 311 # block4: tiles 11-18, each set of 8 with its own offset
  export KCACHE_SERVE=$V/kcache
  stop
  client block4 410 eight-warmup; idle
  many warm8 block4 411
  idle; $V/kcache serve --json
  stop
  many cold8 block4 511
  idle; $V/kcache serve --json
  stop
fi
echo "== server log"
grep -iE "pch|worker|warn|error" $LOG | grep -v "level=DEBUG" | cut -c1-300 | head -40
cp $LOG $OUT/serve.log 2>/dev/null
ls -d /tmp/__nvrtc_auto_pch_* 2>/dev/null | head
