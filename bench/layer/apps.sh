#!/usr/bin/env bash
# apps.sh times unmodified OpenCL applications to their first result, side
# by side in one run: with no cache at all, cold and warm through the kcache
# layer, cold and warm through PoCL's own kernel cache, and cold and warm
# through both (the layer with PoCL's cache left on). Warm runs are repeated
# (REPEAT, default 3), interleaved, and their median is reported; so are cold
# runs with COLD_REPEAT (default 1), each on empty caches. After each
# cold run through the layer the script waits for the layer's background
# worker (kcache layer-worker) to store what the run ordered, and reports
# that wait ("bg", ms): the warm runs must find the entries, and the time
# is work the machine did after the application had exited.
# With COLD_PAIRS=N the script instead runs N interleaved pairs of cold runs,
# PoCL's cache alone and the layer with PoCL's cache on ("both"), in
# alternating order, each on empty caches, and prints every pair, both
# medians, their ratio, and the median of the pairs' ratios with its 95%
# confidence interval: the comparison the recommended configuration must
# win, settled by many pairs.
# Usage: bench/layer/apps.sh [clpeak] [pyopencl] [hashcat] [opencv] [ffmpeg] [clfft] [clblast] [gegl] [darktable] [darktable-fail]
# LAYER=PATH takes another build of the layer (a kcache command beside it);
# with COLD_PAIRS, BASE_LAYER=PATH adds a third build to each pair.
# Needs ./libkcache-layer.so and ./kcache beside it, the worker the layer
# starts (make layer builds both).
set -euo pipefail
cd "$(dirname "$0")/../.."
lib=${LAYER:-$PWD/libkcache-layer.so}
kcache=$PWD/kcache
repeat=${REPEAT:-3}
cold_repeat=${COLD_REPEAT:-1}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp layer/testdata/sums.py layer/testdata/umat.py "$work/"
echo '#define SCALE 2.0f' >"$work/scale.h"
# CLBlast through the tests' C host, and GEGL's input image.
if [ -e /usr/include/clblast_c.h ]; then gcc -O2 -o "$work/blas" layer/testdata/blas.c -lclblast -lOpenCL; fi
if command -v ffmpeg >/dev/null; then
	ffmpeg -hide_banner -loglevel error -f lavfi -i testsrc=size=128x96 -frames:v 1 -y "$work/in.png"
fi

# first_result runs an application with the given environment and prints the
# milliseconds until its first output line matching $marker.
first_result() {
	local marker=$1
	shift
	local start end
	start=$(date +%s%N)
	end=$( (cd "$work" && env -u OPENCL_LAYERS "$@" 2>/dev/null || true) | while IFS= read -r line; do
		if [[ $line =~ $marker ]]; then
			date +%s%N
			cat >/dev/null
			break
		fi
	done)
	[ -n "$end" ] || { echo "no result from: $*" >&2; exit 1; }
	echo $(((end - start) / 1000000))
}

# bg_wait waits for the background worker of the cache $1 and prints how
# long that took, in ms.
bg_wait() {
	local start
	start=$(date +%s%N)
	KCACHE_DIR=$1 "$kcache" layer-worker --wait 30m
	echo $((($(date +%s%N) - start) / 1000000))
}

# fresh empties the calling run's home ($home, a local of run_app or
# run_pairs) and prints the environment that points an application at it:
# each run gets empty application caches (hashcat's own kernel cache
# included), so that only the cache under test carries builds over.
fresh() { rm -rf "$home"; mkdir -p "$home"; echo "HOME=$home XDG_CACHE_HOME=$home/c XDG_DATA_HOME=$home/d PYOPENCL_NO_CACHE=1 POCL_CACHE_DIR=$home/pocl"; }

median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

run_app() {
	local name=$1 marker=$2
	shift 2
	local home=$work/home-$name
	local kc=$work/kcache-$name pocl=$work/pocl-$name kc2=$work/kcache2-$name pocl2=$work/pocl2-$name
	local n=() c=() g=() pc=() bc=() bg2=()
	# Cold runs, COLD_REPEAT times (default 1), interleaved, each on empty
	# caches; the warm runs use the caches of the last.
	for _ in $(seq "$cold_repeat"); do
		rm -rf "$kc" "$pocl" "$kc2" "$pocl2"
		n+=("$(first_result "$marker" $(fresh) POCL_KERNEL_CACHE=0 "$@")")
		c+=("$(first_result "$marker" $(fresh) POCL_KERNEL_CACHE=0 KCACHE_DIR="$kc" OPENCL_LAYERS="$lib" "$@")")
		g+=("$(bg_wait "$kc")")
		pc+=("$(first_result "$marker" $(fresh) POCL_KERNEL_CACHE=1 POCL_CACHE_DIR="$pocl" "$@")")
		bc+=("$(first_result "$marker" $(fresh) POCL_KERNEL_CACHE=1 POCL_CACHE_DIR="$pocl2" KCACHE_DIR="$kc2" OPENCL_LAYERS="$lib" "$@")")
		bg2+=("$(bg_wait "$kc2")")
	done
	none=$(median "${n[@]}")
	cold=$(median "${c[@]}")
	bg=$(median "${g[@]}")
	pcold=$(median "${pc[@]}")
	bcold=$(median "${bc[@]}")
	bbg=$(median "${bg2[@]}")
	local w=() p=() b=()
	for _ in $(seq "$repeat"); do
		w+=("$(first_result "$marker" $(fresh) POCL_KERNEL_CACHE=0 KCACHE_DIR="$kc" OPENCL_LAYERS="$lib" "$@")")
		p+=("$(first_result "$marker" $(fresh) POCL_KERNEL_CACHE=1 POCL_CACHE_DIR="$pocl" "$@")")
		b+=("$(first_result "$marker" $(fresh) POCL_KERNEL_CACHE=1 POCL_CACHE_DIR="$pocl2" KCACHE_DIR="$kc2" OPENCL_LAYERS="$lib" "$@")")
	done
	warm=$(median "${w[@]}")
	pwarm=$(median "${p[@]}")
	bwarm=$(median "${b[@]}")
	ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
	printf '| %s | %s | %s (%s) | %s | %s | %s | %s (%s) | %s | %sx | %sx | %sx |\n' "$name" "$none" "$cold" "$bg" "$warm" "$pcold" "$pwarm" "$bcold" "$bbg" "$bwarm" \
		"$(ratio "$pwarm" "$warm")" "$(ratio "$pcold" "$bcold")" "$(ratio "$pwarm" "$bwarm")"
}

# run_pairs times COLD_PAIRS interleaved cold pairs, PoCL's cache alone and
# both, in alternating order, each on empty caches, the worker waited for
# after each "both" run.
# With BASE_LAYER set, each pair gets a third run, "both" through that
# build of the layer (main's, say), the order rotating, so that a change
# to the layer is measured side by side with what it changes.
run_pairs() {
	local name=$1 marker=$2
	shift 2
	local home=$work/home-$name
	local pocl=$work/pocl-$name kc2=$work/kcache2-$name pocl2=$work/pocl2-$name kc3=$work/kcache3-$name pocl3=$work/pocl3-$name
	local pc=() bc=() cc=() pairs=()
	local i=0
	for _ in $(seq "$COLD_PAIRS"); do
		rm -rf "$pocl" "$kc2" "$pocl2" "$kc3" "$pocl3"
		# The order alternates (rotates, with BASE_LAYER): a run that always
		# came first, after the previous pair's worker, would be favoured or
		# penalised by whatever that leaves behind (the page cache, a CPU's
		# frequency), and the ratio would carry it.
		local a b c="" order=(p b)
		if [ -n "${BASE_LAYER:-}" ]; then
			case $((i % 3)) in 0) order=(p b c) ;; 1) order=(b c p) ;; 2) order=(c p b) ;; esac
		elif [ $((i % 2)) -eq 1 ]; then
			order=(b p)
		fi
		for v in "${order[@]}"; do
			case $v in
			p) a=$(first_result "$marker" $(fresh) POCL_KERNEL_CACHE=1 POCL_CACHE_DIR="$pocl" "$@") ;;
			b) b=$(first_result "$marker" $(fresh) POCL_KERNEL_CACHE=1 POCL_CACHE_DIR="$pocl2" KCACHE_DIR="$kc2" OPENCL_LAYERS="$lib" "$@")
				bg_wait "$kc2" >/dev/null ;;
			c) c=$(first_result "$marker" $(fresh) POCL_KERNEL_CACHE=1 POCL_CACHE_DIR="$pocl3" KCACHE_DIR="$kc3" OPENCL_LAYERS="$BASE_LAYER" "$@")
				bg_wait "$kc3" >/dev/null ;;
			esac
		done
		i=$((i + 1))
		pc+=("$a") bc+=("$b")
		if [ -n "$c" ]; then cc+=("$c") pairs+=("$a/$b/$c"); else pairs+=("$a/$b"); fi
	done
	local pm bm
	pm=$(median "${pc[@]}") bm=$(median "${bc[@]}")
	ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
	if [ -n "${BASE_LAYER:-}" ]; then
		local cm
		cm=$(median "${cc[@]}")
		printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$pm" "$bm" "$cm" "$(ratio "$pm" "$bm")" "$(ratio "$pm" "$cm")" \
			"$(pair_ratios "${pc[*]}" "${bc[*]}")" "$(pair_ratios "${pc[*]}" "${cc[*]}")" "${pairs[*]}"
	else
		printf '| %s | %s | %s | %s | %s | %s |\n' "$name" "$pm" "$bm" "$(ratio "$pm" "$bm")" "$(pair_ratios "${pc[*]}" "${bc[*]}")" "${pairs[*]}"
	fi
}

# pair_ratios prints the median of the pairs' ratios (the first list's run
# over the second's, pair by pair) and its 95% confidence interval, from
# order statistics (the sign test's interval: it assumes nothing of the
# ratios' distribution). With fewer than 6 pairs no interval reaches 95%
# and the range of the ratios is printed. An interval that holds 1.000
# says the two configurations are not told apart by this many pairs.
pair_ratios() {
	local a=($1) b=($2) i
	for i in "${!a[@]}"; do echo "${a[$i]} ${b[$i]}"; done | awk '{ print $1 / $2 }' | sort -g | awk '
		{ r[NR] = $1 }
		END {
			n = NR
			med = (n % 2) ? r[(n + 1) / 2] : (r[n / 2] + r[n / 2 + 1]) / 2
			# the largest k with P(Bin(n, 1/2) < k) <= 0.025
			# (the interval [r_k, r_(n-k+1)] covers with 1 - 2 P(X < k))
			k = 0; p = 2 ^ -n; cdf = p
			for (j = 1; j <= n && cdf <= 0.025; j++) {
				k = j; p = p * (n - j + 1) / j; cdf += p
			}
			if (k < 1) { k = 1 }
			printf "%.3f [%.3f, %.3f]", med, r[k], r[n - k + 1]
		}'
}

if [ -n "${COLD_PAIRS:-}" ]; then
	run_app() { run_pairs "$@"; }
	if [ -n "${BASE_LAYER:-}" ]; then
		echo "| application | PoCL cache cold (median ms) | both cold | both cold, BASE_LAYER | PoCL cold / both cold | PoCL cold / BASE_LAYER | pairs' ratios, PoCL/both: median [95% CI] | PoCL/BASE_LAYER | runs, PoCL/both/base (ms) |"
		echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
	else
		echo "| application | PoCL cache cold (median ms) | both cold | PoCL cold / both cold | pairs' ratios, PoCL/both: median [95% CI] | pairs, PoCL/both (ms) |"
		echo "| --- | --- | --- | --- | --- | --- |"
	fi
else
echo "| application | no cache (ms) | layer cold (bg) | layer warm | PoCL cache cold | PoCL cache warm | both cold (bg) | both warm | PoCL warm / layer warm | PoCL cold / both cold | PoCL warm / both warm |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
fi
# dt_seed makes darktable's configuration once, with the OpenCL device it
# found enabled (the eighth field of its cldevice line is "disabled").
dt_seed() {
	[ -d "$work/dtseed" ] && return
	(cd "$work" && POCL_KERNEL_CACHE=0 darktable-cli in.png dt.jpg --core --configdir dtseed --conf opencl=TRUE >/dev/null 2>&1; rm -f dt.jpg)
	sed -i -E 's/^(cldevice_v4_[A-Za-z0-9]+=([^ ]+ ){7})1 /\10 /' "$work/dtseed/darktablerc"
}

# dt_kernels makes darktable's programs build on PoCL 3.1: darktable 4.2
# passes its kernel directory as -I" DIR " and PoCL keeps the blanks, so
# clang searches "./ DIR " from the working directory, where this links
# the real directory. Without it the first program fails to build and
# darktable goes on without OpenCL (the darktable-fail row).
dt_kernels() {
	local d="$work/ /usr/share/darktable"
	mkdir -p "$d" && ln -sfn /usr/share/darktable/kernels "$d/kernels "
}

apps=("$@")
[ ${#apps[@]} -gt 0 ] || apps=(clpeak pyopencl hashcat)
for a in "${apps[@]}"; do
	case $a in
	clpeak) run_app clpeak 'Kernel launch latency' clpeak --kernel-latency ;;
	pyopencl) run_app pyopencl 'scaled sum' /usr/bin/python3 sums.py ;;
	hashcat) run_app hashcat 'Speed' hashcat -b -m 0 --runtime 1 --force ;;
	# OpenCV's own binary cache off, and its CPU device allowed (it takes
	# GPUs only by default); the marker is its last result.
	opencv) run_app opencv '^add ' env OPENCV_OPENCL_DEVICE=:CPU: OPENCV_OPENCL_CACHE_ENABLE=false /usr/bin/python3 umat.py ;;
	# The same commands as the layer's TestMoreApplications.
	ffmpeg) run_app ffmpeg '^0, +2,' ffmpeg -hide_banner -loglevel error -init_hw_device opencl=ocl:0.0 -filter_hw_device ocl \
		-f lavfi -i testsrc=size=160x120:rate=5 -frames:v 3 \
		-vf format=yuv420p,hwupload,avgblur_opencl=sizeX=3,unsharp_opencl,sobel_opencl,hwdownload,format=yuv420p -f framemd5 - ;;
	clfft) run_app clfft 'PASS' clFFT-client -x 64 -y 64 -p 1 ;;
	clblast) run_app clblast '^sdot' ./blas ;;
	# darktable-cli with OpenCL on: its configuration is made once and its
	# CPU device enabled (darktable discards a new CPU device). darktable
	# builds its programs (dt_kernels); darktable-fail has its first
	# program (demosaic_ppg.cl) fail to build, as it does on PoCL 3.1
	# as installed, and darktable go on without OpenCL: that row times a
	# build failure passing through.
	darktable) dt_seed && dt_kernels && run_app darktable '^darktable done' sh -c 'rm -rf dtcfg && cp -r dtseed dtcfg && darktable-cli in.png dt.jpg --core --configdir dtcfg --conf opencl=TRUE >/dev/null && rm -f dt.jpg && echo darktable done' ;;
	darktable-fail) dt_seed && rm -rf "$work/ " && run_app darktable-fail '^darktable done' sh -c 'rm -rf dtcfg && cp -r dtseed dtcfg && darktable-cli in.png dt.jpg --core --configdir dtcfg --conf opencl=TRUE >/dev/null && rm -f dt.jpg && echo darktable done' ;;
	gegl) run_app gegl '^gegl done' sh -c 'GEGL_USE_OPENCL=cpu gegl -i in.png -o out.png -- gaussian-blur std-dev-x=2 std-dev-y=2 && echo gegl done' ;;
	esac
done
