package deps

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// cudaKernels are header-heavy CUDA sources of the kinds users compile
// through NVRTC: CUB block and device algorithms, Thrust and libcu++.
var cudaKernels = map[string]string{
	"cub_block_reduce.cu": `#include <cub/block/block_reduce.cuh>
extern "C" __global__ void k(const int* in, int* out) {
  using R = cub::BlockReduce<int, 128>;
  __shared__ typename R::TempStorage t;
  int s = R(t).Sum(in[threadIdx.x]);
  if (threadIdx.x == 0) *out = s;
}
`,
	"cub_radix_sort.cu": `#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_load.cuh>
#include <cub/block/block_store.cuh>
extern "C" __global__ void k(int* d) {
  using S = cub::BlockRadixSort<int, 128, 4>;
  __shared__ typename S::TempStorage t;
  int v[4];
  cub::LoadDirectBlocked(threadIdx.x, d, v);
  S(t).Sort(v);
  cub::StoreDirectBlocked(threadIdx.x, d, v);
}
`,
	"thrust_tuple.cu": `#include <thrust/tuple.h>
#include <thrust/functional.h>
extern "C" __global__ void k(int* d) { thrust::tuple<int, int> t(d[0], d[1]); d[2] = thrust::get<0>(t) + thrust::get<1>(t); }
`,
	"fp16.cu": `#include <cuda_fp16.h>
extern "C" __global__ void k(__half* d) { d[0] = __hadd(d[0], d[1]); }
`,
	"cooperative_groups.cu": `#include <cooperative_groups.h>
extern "C" __global__ void k(int* d) { cooperative_groups::this_thread_block().sync(); d[0] = 1; }
`,
	"libcudacxx.cu": `#include <cuda/std/array>
#include <cuda/std/type_traits>
extern "C" __global__ void k(int* d) { cuda::std::array<int, 2> a{d[0], d[1]}; d[2] = a[0] + a[1]; }
`,
}

// TestCUDAAgainstNVCC checks the scanner against nvcc's own preprocessor
// on CCCL headers: every file nvcc -M lists under the include directory
// must be among the scanner's dependencies, or the scan must have refused
// the source. It runs where KCACHE_CUDA_INCLUDE names the toolkit's include
// directory (the GPU machine) and logs, per kernel, how many files each
// side lists and why a source was refused.
func TestCUDAAgainstNVCC(t *testing.T) {
	inc := os.Getenv("KCACHE_CUDA_INCLUDE")
	if inc == "" {
		t.Skip("KCACHE_CUDA_INCLUDE is not set")
	}
	nvcc, err := exec.LookPath("nvcc")
	if err != nil {
		t.Skip("no nvcc")
	}
	dir := t.TempDir()
	// nvcc includes cuda_runtime.h in every host compile, which NVRTC
	// does not: the files an empty source lists are left out.
	empty := filepath.Join(dir, "empty.cu")
	os.WriteFile(empty, nil, 0o644)
	implicit := map[string]bool{}
	for _, f := range nvccDeps(t, nvcc, dir, empty, inc) {
		implicit[f] = true
	}
	for name, src := range cudaKernels {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			os.WriteFile(path, []byte(src), 0o644)
			// nvcc searches its own include directory before the -I
			// ones; NVRTC has none, so the scanner is given it first.
			args := []string{"-I", filepath.Dir(inc), "-I", inc, "-std=c++17", "-arch=sm_90"}
			_, tr, err := NewScanner(nil).Scan(context.Background(), Input{Source: []byte(src), Path: path, WorkDir: dir, Args: args})
			listed := nvccDeps(t, nvcc, dir, path, inc)
			if errors.Is(err, ErrUncacheable) {
				t.Logf("refused: %v (nvcc lists %d files under %s)", err, len(listed), inc)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			have := map[string]bool{}
			for _, d := range tr {
				if d.Rule != RuleAbsent {
					if real, err := filepath.EvalSymlinks(d.Path); err == nil {
						have[real] = true
					}
				}
			}
			missed := 0
			for _, f := range listed {
				if !have[f] && !implicit[f] {
					missed++
					t.Errorf("nvcc reads %s; the key lacks it", f)
				}
			}
			t.Logf("scanner keys %d files, nvcc -M lists %d under %s, missed %d", len(have), len(listed), inc, missed)
		})
	}
}

// nvccDeps returns the real paths of the files under inc's parent (the
// toolkit's include directory) that nvcc -M lists for path.
func nvccDeps(t *testing.T, nvcc, dir, path, inc string) []string {
	t.Helper()
	root := filepath.Dir(inc)
	cmd := exec.Command(nvcc, "-M", "-std=c++17", "-arch=sm_90", "-I", inc, "-I", root, path)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nvcc -M: %v", err)
	}
	realRoot, _ := filepath.EvalSymlinks(root)
	var files []string
	sc := bufio.NewScanner(bytes.NewReader(bytes.ReplaceAll(out, []byte("\\\n"), []byte(" "))))
	for sc.Scan() {
		_, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		for _, f := range strings.Fields(rest) {
			real, err := filepath.EvalSymlinks(f)
			if err == nil && (strings.HasPrefix(real, realRoot+"/") || strings.HasPrefix(f, root+"/")) {
				files = append(files, real)
			}
		}
	}
	return files
}
