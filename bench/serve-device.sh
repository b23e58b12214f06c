#!/bin/bash
# Device run for issue 22 (compile server): the GPU tests and the benchmark of
# bench/RESULTS-cuda.md, "Compile server (issue 22)". Put cuda.test,
# compileserver.test and kcache (built as that section says) beside it.
B=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
exec > >(tee $OUT/run.log) 2>&1
export XDG_RUNTIME_DIR=$(mktemp -d /tmp/kcsrt.XXXX); chmod 700 $XDG_RUNTIME_DIR
cd $B
echo "== tests"
timeout 60 ./compileserver.test -test.count=1 2>&1 | tail -3
timeout 100 ./cuda.test -test.run 'TestServe|TestNVRTCPCHHeaderEdit' -test.v -test.count=1 2>&1 | grep -v "^=== RUN" | tail -40
echo "== benchmark: each client a new process"
HDR=$(mktemp -d /tmp/kchdr.XXXX); echo '#define VALUE 1' > $HDR/value.cuh; touch -d '1 hour ago' $HDR/value.cuh
export KCACHE_SERVE_BENCH_HDR=$HDR
client() { # idx label
  local d=$(mktemp -d /tmp/kcb.XXXX) t0=$(date +%s%N)
  local out=$(KCACHE_SERVE_BENCH=$1 KCACHE_SERVE_BENCH_DIR=$d timeout 60 ./cuda.test -test.run '^TestServeBenchClient$' -test.count=1 2>&1)
  local t1=$(date +%s%N)
  local line=$(echo "$out" | grep BENCH | tr "\n" " ")
  [ -z "$line" ] && line=$(echo "$out" | tail -4 | tr '\n' ' ')
  echo "$2 process_ms=$(( (t1-t0)/1000000 )) $line"
  rm -rf $d
}
unset KCACHE_SERVE
echo "-- plain NVRTC in the client"
for i in 0 1 2 3; do client $i plain; done
echo "-- through the server, started on demand by the first client"
export KCACHE_SERVE=$B/kcache
for i in 10 11 12 13 14; do client $i served; done
$B/kcache serve --status
echo "-- 8 clients at once, 8 different kernels: plain"
unset KCACHE_SERVE; pids=
t0=$(date +%s%N); for i in 20 21 22 23 24 25 26 27; do client $i plain8 & pids="$pids $!"; done; wait $pids; t1=$(date +%s%N)
echo "plain8 total_ms=$(( (t1-t0)/1000000 ))"
echo "-- 8 clients at once, 8 different kernels: warm server"
export KCACHE_SERVE=$B/kcache; pids=
t0=$(date +%s%N); for i in 30 31 32 33 34 35 36 37; do client $i served8 & pids="$pids $!"; done; wait $pids; t1=$(date +%s%N)
echo "served8 total_ms=$(( (t1-t0)/1000000 ))"
$B/kcache serve --json
$B/kcache serve --stop; sleep 0.5
echo "-- 8 clients at once: warm server with one worker"
$B/kcache serve --workers 1 --log $XDG_RUNTIME_DIR/w1.log & sleep 0.5
client 50 served-w1-warmup
pids=; t0=$(date +%s%N); for i in 51 52 53 54 55 56 57 58; do client $i served8w1 & pids="$pids $!"; done; wait $pids; t1=$(date +%s%N)
echo "served8w1 total_ms=$(( (t1-t0)/1000000 ))"
$B/kcache serve --json
$B/kcache serve --stop
echo "-- KCACHE_SERVE=connect with no server: fallback"
export KCACHE_SERVE=connect
for i in 40 41; do client $i connect-none; done
grep -v "^$" $XDG_RUNTIME_DIR/kcache/serve.sock.log | tail -12
cat $XDG_RUNTIME_DIR/w1.log | grep -i pch | head -5
