package demo

import (
	"path/filepath"
	"strings"
	"sync"
)

// phaseEnv returns a phase's environment for the demo's device. The
// phases are written for PoCL; on NVIDIA's driver the peer is its own
// cache instead. NVIDIA's OpenCL program binaries are PTX, which the
// driver compiles to machine code at every load unless its ComputeCache
// (CUDA_CACHE_PATH) holds the result: the kcache phases and the floor get
// a ComputeCache of their own, as kcache is meant to run there, and the
// peer (no kcache) one of its own too.
func phaseEnv(ph demoPhase, dir string) []string {
	env := ph.env(dir)
	if !nvidiaDevice() {
		return env
	}
	var out []string
	peer := false
	for _, kv := range env {
		if kv == "KCACHE_PERSISTENT=0" {
			peer = true
		}
		if !strings.HasPrefix(kv, "POCL_") {
			out = append(out, kv)
		}
	}
	cache := filepath.Join(dir, "nv-kcache")
	if peer {
		cache = filepath.Join(dir, "nv-peer")
	}
	return append(out, "CUDA_CACHE_PATH="+cache, "CUDA_CACHE_DISABLE=0", "CUDA_CACHE_MAXSIZE=4294967296")
}

// nvidiaDevice reports whether the demo's device is on NVIDIA's OpenCL
// platform.
var nvidiaDevice = sync.OnceValue(func() bool {
	d, err := host.SelectDevice(demoDevice)
	if err != nil {
		return false
	}
	return strings.Contains(d.Platform().Name(), "NVIDIA")
})
