#!/bin/bash
# nvidia.sh runs the layer's test hosts under NVIDIA's OpenCL driver on the
# GPU machine (it has no Go): buildinfo and handles without the layer,
# through it with the cache off, cold and warm, for two builds of the layer
# (old.so and new.so), and prints the differences of each run's lines from
# the run without the layer into $OUT/all.txt. Each run has a ComputeCache
# of its own (CUDA_CACHE_PATH), except the "shared" runs, which share one
# as users' runs do: NVIDIA's driver then logs nothing for a build its
# cache served, with or without the layer.
#
# Prepare a directory here and carry it to the machine:
#   make layer && cp libkcache-layer.so D/new.so   (and an older build as D/old.so)
#   for h in buildinfo handles; do gcc -o D/$h layer/testdata/$h.c -lOpenCL; done
#   cp bench/layer/nvidia.sh D/run.sh
# then run `bash D/run.sh` there. VENDORS=/etc/OpenCL/vendors runs it on PoCL.
cd "$(dirname "$0")"
D=$PWD
W=$(mktemp -d)
mkdir -p $W/ocl && echo libnvidia-opencl.so.1 > $W/ocl/nvidia.icd
export LD_LIBRARY_PATH=/lib/x86_64-linux-gnu OCL_ICD_VENDORS=${VENDORS:-$W/ocl}
{
echo "== env"; cat /etc/os-release | head -2; ls -la /lib/x86_64-linux-gnu/libOpenCL* 2>&1; ldd ./buildinfo | grep -i opencl
nvidia-smi -L 2>&1 | head -2
} > $OUT/all.txt 2>&1
# one runs a host ($1) in a fresh home, with a CUDA cache dir ($2), a layer
# ($3, "" for none) and a kcache dir ($4, "" for the cache off); label $5.
one() {
	local h=$(mktemp -d)
	local envs=(HOME=$h CUDA_CACHE_PATH=$2)
	[ -n "$3" ] && envs+=(OPENCL_LAYERS=$D/$3 KCACHE_DEBUG=1)
	if [ -n "$4" ]; then envs+=(KCACHE_DIR=$4); elif [ -n "$3" ]; then envs+=(KCACHE_PERSISTENT=0); fi
	local t0=$(date +%s.%N)
	env "${envs[@]}" timeout 120 ./$1 > $W/$5.out 2> $W/$5.err
	local rc=$?
	echo "== $5 rc=$rc $(awk "BEGIN{print $(date +%s.%N)-$t0}") s; hits $(grep -c 'layer: hit' $W/$5.err) misses $(grep -c 'layer: miss' $W/$5.err)" >> $OUT/all.txt
}
for host in buildinfo handles; do
	one $host $W/cc-$host-base1 "" "" $host-base1
	one $host $W/cc-$host-base1 "" "" $host-base2   # the driver's cache warm
	one $host $W/cc-$host-pass old.so "" $host-pass
	for l in old new; do
		one $host $W/cc-$host-$l-cold $l.so $W/kc-$host-$l $host-$l-cold
		one $host $W/cc-$host-$l-warm $l.so $W/kc-$host-$l $host-$l-warm
	done
	for r in base2 pass old-cold old-warm new-cold new-warm; do
		echo "== diff $host-base1 $host-$r" >> $OUT/all.txt
		diff $W/$host-base1.out $W/$host-$r.out >> $OUT/all.txt
	done
done
# The issue's setting: NVIDIA's own ComputeCache shared by every run, the
# runs without the layer first.
one buildinfo $W/cc-shared "" "" shared-base1
one buildinfo $W/cc-shared "" "" shared-base2
one buildinfo $W/cc-shared new.so $W/kc-shared shared-new-cold
one buildinfo $W/cc-shared new.so $W/kc-shared shared-new-warm
for r in base2 new-cold new-warm; do
	echo "== diff shared-base1 shared-$r" >> $OUT/all.txt
	diff $W/shared-base1.out $W/shared-$r.out >> $OUT/all.txt
done
# Four warm processes at once.
for i in 1 2 3 4; do one buildinfo $W/cc-conc-$i new.so $W/kc-buildinfo-new conc-$i & done; wait
for i in 1 2 3 4; do echo "== diff buildinfo-base1 conc-$i" >> $OUT/all.txt; diff $W/buildinfo-base1.out $W/conc-$i.out >> $OUT/all.txt; done
grep -h "kcache layer: \(looked up\|built\|stored\)" $W/*new-cold.err | cut -c1-160 >> $OUT/all.txt
echo "== buildinfo-base1" >> $OUT/all.txt; cat $W/buildinfo-base1.out >> $OUT/all.txt
echo "== handles-base1" >> $OUT/all.txt; cat $W/handles-base1.out >> $OUT/all.txt
cd $W && tar czf $OUT/runs.tgz *.out *.err
